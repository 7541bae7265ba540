package ai

import (
	"context"
	"encoding/json"
	"time"
)

// LocalModel names the local provider's algorithms; it is part of the
// cache key, so bump it when they change to stop serving older results.
const LocalModel = "suite-local-1"

// Local is the built-in provider: no network, deterministic, and useful on
// real text. It summarizes extractively, finds action items by rules and
// narrates computed numbers; usage is counted with CountTokens, so usage
// and quotas work offline too.
type Local struct{}

// NewLocal returns the local provider.
func NewLocal() *Local { return &Local{} }

// Info describes the local provider.
func (*Local) Info() Info {
	return Info{Name: "local", Model: LocalModel, ChunkTokens: 4000, ChunkOverlap: 200, CallTimeout: 30 * time.Second}
}

// Summarize picks sentences (see extractiveSummary). A part of a longer
// document keeps a long summary's worth of sentences, for the combining
// pass to choose from.
func (*Local) Summarize(ctx context.Context, req SummarizeRequest) (Completion, error) {
	length := req.Length
	if req.Parts > 1 && !req.Combine {
		length = "long"
	}
	out, _ := extractiveSummary(req.Text, length)
	return Completion{Text: out, Usage: localUsage(req.Text, out)}, ctx.Err()
}

// ActionItems applies the rules of extractActionItems.
func (*Local) ActionItems(ctx context.Context, req ActionItemsRequest) (ActionItemsResult, error) {
	items := extractActionItems(req.Text, req.Reference)
	b, _ := json.Marshal(items)
	return ActionItemsResult{Items: items, Usage: localUsage(req.Text, string(b))}, ctx.Err()
}

// Narrate writes the narrative from the numbers (see localNarrative).
func (*Local) Narrate(ctx context.Context, req NarrateRequest) (Completion, error) {
	out := localNarrative(req.Question, req.Analysis)
	in, _ := json.Marshal(req.Analysis)
	return Completion{Text: out, Usage: localUsage(req.Question+string(in), out)}, ctx.Err()
}

func localUsage(in, out string) Usage {
	return Usage{PromptTokens: int64(CountTokens(in)), CompletionTokens: int64(CountTokens(out)), Calls: 1}
}
