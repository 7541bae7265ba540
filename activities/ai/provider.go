// Package ai holds the suite's generative-AI providers and the text
// processing they share: token counting, chunking for map-reduce, and the
// built-in local provider (extractive summaries, rule-based action items,
// narratives written from computed numbers). The OpenAI-compatible provider
// lives in the openaicompat subpackage, so that nothing importing this
// package (the workflows, through activities) imports an HTTP client.
package ai

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/aidata"
)

// Info describes a provider.
type Info struct {
	// Name is "local" or "openai"; with Model it is part of the cache key
	// and of every result.
	Name  string
	Model string
	// ChunkTokens is the most document tokens one call takes; longer
	// documents are split (map-reduce). ChunkOverlap tokens of each chunk
	// repeat at the start of the next, so no sentence loses its context.
	ChunkTokens  int
	ChunkOverlap int
	// CallTimeout bounds one call; the workflow's activity timeouts are
	// derived from it.
	CallTimeout time.Duration
}

// Provider performs the three AI operations. Every method makes at most one
// model call; the caller splits long documents and combines the parts.
type Provider interface {
	Info() Info
	Summarize(ctx context.Context, req SummarizeRequest) (Completion, error)
	ActionItems(ctx context.Context, req ActionItemsRequest) (ActionItemsResult, error)
	Narrate(ctx context.Context, req NarrateRequest) (Completion, error)
}

// SummarizeRequest asks for a summary of Text at Length. For a long
// document, each chunk is summarized as Part (1-based) of Parts, and the
// joined part summaries are then summarized once more with Combine set.
type SummarizeRequest struct {
	Text    string
	Length  string
	Part    int
	Parts   int
	Combine bool
}

// ActionItemsRequest asks for the action items of Text. Relative due dates
// ("tomorrow", "by Friday") count from the date of the dated entry they
// appear in ("[2026-03-02 14:05] Name:" headers, a "Date:" line), else
// from Reference.
type ActionItemsRequest struct {
	Text      string
	Reference time.Time
}

// ActionItemsResult is what ActionItems found.
type ActionItemsResult struct {
	Items []models.AIActionItem
	Usage Usage
}

// NarrateRequest asks for a narrative of computed numbers that answers
// Question (when given). The provider must not compute numbers itself.
type NarrateRequest struct {
	Question string
	Analysis *aidata.Analysis
}

// Completion is generated text and what it cost.
type Completion struct {
	Text  string
	Usage Usage
}

// Usage counts tokens: reported by the provider, or approximated with
// CountTokens by the local one.
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	Calls            int   `json:"calls"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens, Calls: u.Calls + v.Calls}
}

// Temporal error types of provider failures. The first four are retried
// (with the provider's Retry-After, when it sends one); the last two fail
// the job at once.
const (
	ErrTypeRateLimited  = "AIProviderRateLimited"  // 429
	ErrTypeUnavailable  = "AIProviderUnavailable"  // 5xx, connection errors
	ErrTypeTimeout      = "AIProviderTimeout"      // no answer within CallTimeout
	ErrTypeBadOutput    = "AIProviderBadOutput"    // an answer we cannot use (empty, not the JSON asked for)
	ErrTypeRejected     = "AIProviderRejected"     // 400 and other 4xx: the request itself is refused
	ErrTypeUnauthorized = "AIProviderUnauthorized" // 401/403: the suite's credentials are refused
)

// NonRetryableErrorTypes lists the provider failures no retry can fix.
var NonRetryableErrorTypes = []string{ErrTypeRejected, ErrTypeUnauthorized}

// MaxRetryAfter caps a provider's Retry-After, so a bogus value cannot park
// a job for hours.
const MaxRetryAfter = 5 * time.Minute

// ProviderError is a failed provider call.
type ProviderError struct {
	Type string
	// Status is the HTTP status (0 when there was no answer).
	Status int
	// Message is safe to show the organization: it never holds credentials.
	Message string
	// RetryAfter is the provider's requested delay (429, 503), capped at
	// MaxRetryAfter; 0 lets the retry policy choose.
	RetryAfter time.Duration
	Err        error
}

func (e *ProviderError) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Type, e.Status, e.Message)
	}
	return e.Type + ": " + e.Message
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable tells whether another attempt may succeed.
func (e *ProviderError) Retryable() bool {
	return e.Type != ErrTypeRejected && e.Type != ErrTypeUnauthorized
}

// TemporalError turns a provider failure into the activity error Temporal
// acts on: non-retryable for a refused request, retryable otherwise, with
// the provider's Retry-After as the next retry delay. Other errors pass
// through unchanged.
func TemporalError(err error) error {
	var pe *ProviderError
	if !errors.As(err, &pe) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(pe.Error(), pe.Type, temporal.ApplicationErrorOptions{
		NonRetryable:   !pe.Retryable(),
		NextRetryDelay: min(pe.RetryAfter, MaxRetryAfter),
		Cause:          pe.Err,
	})
}
