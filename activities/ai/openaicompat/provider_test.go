package openaicompat_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/activities/ai/openaicompat"
	"github.com/business-suite/suite/activities/ai/openaicompat/openaitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/aidata"
)

func newProvider(srv *openaitest.Server, timeout time.Duration) *openaicompat.Provider {
	return openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: srv.BaseURL(), Model: "gpt-test", Timeout: timeout})
}

func TestSummarizeSpeaksTheWireFormatAndReportsUsage(t *testing.T) {
	srv := openaitest.New(t)
	p := newProvider(srv, 5*time.Second)
	srv.Enqueue(openaitest.Reply{Content: "  The printer caught fire; a technician comes Friday.  "})
	out, err := p.Summarize(t.Context(), ai.SummarizeRequest{Text: "Printer on fire. Technician Friday.", Length: models.AILengthShort})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "The printer caught fire; a technician comes Friday." {
		t.Fatalf("text %q", out.Text)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Model != "gpt-test" || reqs[0].MaxCompletionTokens == 0 || len(reqs[0].Messages) != 2 ||
		reqs[0].Messages[0].Role != openai.ChatMessageRoleSystem || !strings.Contains(openaitest.Prompt(reqs[0]), "at most 3 sentences") ||
		!strings.HasSuffix(openaitest.Prompt(reqs[0]), "Printer on fire. Technician Friday.") {
		t.Fatalf("request %+v", reqs)
	}
	words := 0
	for _, m := range reqs[0].Messages {
		words += len(strings.Fields(m.Content))
	}
	if out.Usage.PromptTokens != int64(words) || out.Usage.CompletionTokens != 8 || out.Usage.Calls != 1 {
		t.Fatalf("usage %+v (the server counted %d prompt words)", out.Usage, words)
	}
	info := p.Info()
	if info.Name != "openai" || info.Model != "gpt-test" || info.ChunkTokens != 3000 || info.CallTimeout != 5*time.Second {
		t.Fatalf("info %+v", info)
	}
}

func TestFailuresAreClassifiedForRetries(t *testing.T) {
	srv := openaitest.New(t)
	p := newProvider(srv, 300*time.Millisecond)
	cases := []struct {
		name       string
		reply      openaitest.Reply
		typ        string
		retryable  bool
		retryAfter time.Duration
		message    string
	}{
		{"429 with Retry-After seconds", openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "7"}}, ai.ErrTypeRateLimited, true, 7 * time.Second, "rate limiting"},
		{"429 with retry-after-ms", openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After-Ms": "1500"}}, ai.ErrTypeRateLimited, true, 1500 * time.Millisecond, "rate limiting"},
		{"500", openaitest.Reply{Status: 500, ErrorMessage: "The server had an error"}, ai.ErrTypeUnavailable, true, 0, "HTTP 500"},
		{"503 with Retry-After", openaitest.Reply{Status: 503, Header: map[string]string{"Retry-After": "2"}}, ai.ErrTypeUnavailable, true, 2 * time.Second, "HTTP 503"},
		{"400", openaitest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens."}, ai.ErrTypeRejected, false, 0, "maximum context length is 8192 tokens"},
		{"401", openaitest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided: sk-***"}, ai.ErrTypeUnauthorized, false, 0, "OPENAI_API_KEY"},
		{"slow answer", openaitest.Reply{Delay: 5 * time.Second, Content: "late"}, ai.ErrTypeTimeout, true, 0, "did not answer in time"},
		{"empty answer", openaitest.Reply{Content: " "}, ai.ErrTypeBadOutput, true, 0, "no text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.Enqueue(c.reply)
			_, err := p.Summarize(t.Context(), ai.SummarizeRequest{Text: "Some text to summarize."})
			var pe *ai.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ProviderError", err)
			}
			if pe.Type != c.typ || pe.Retryable() != c.retryable || pe.RetryAfter != c.retryAfter || !strings.Contains(pe.Message, c.message) {
				t.Fatalf("got %+v", pe)
			}
			if strings.Contains(pe.Message, "sk-") {
				t.Fatalf("the message leaks the provider's text about the key: %q", pe.Message)
			}
			var appErr *temporal.ApplicationError
			if !errors.As(ai.TemporalError(err), &appErr) || appErr.Type() != c.typ || appErr.NonRetryable() == c.retryable || appErr.NextRetryDelay() != c.retryAfter {
				t.Fatalf("temporal error %v", appErr)
			}
		})
	}
}

func TestUnreachableServerIsRetryable(t *testing.T) {
	srv := openaitest.New(t)
	base := srv.BaseURL()
	srv.Close()
	p := openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: base, Model: "m", Timeout: time.Second})
	_, err := p.Summarize(t.Context(), ai.SummarizeRequest{Text: "x"})
	var pe *ai.ProviderError
	if !errors.As(err, &pe) || !pe.Retryable() || (pe.Type != ai.ErrTypeUnavailable && pe.Type != ai.ErrTypeTimeout) {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestActionItemsAskForJSONAndKeepWellFormedItems(t *testing.T) {
	srv := openaitest.New(t)
	p := newProvider(srv, 5*time.Second)
	ref := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	out, err := p.ActionItems(t.Context(), ai.ActionItemsRequest{Text: "Ana will send the signed contract by Friday.", Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0]
	if req.ResponseFormat == nil || req.ResponseFormat.Type != openai.ChatCompletionResponseFormatTypeJSONObject ||
		!strings.Contains(openaitest.Prompt(req), "2026-03-04 (a Wednesday)") {
		t.Fatalf("request %+v", req)
	}
	if len(out.Items) != 2 || out.Items[0].Text != "Send the signed contract" || *out.Items[0].Owner != "Ana" ||
		*out.Items[0].DueDate != "2026-03-06" || out.Items[1].Owner != nil || out.Items[1].DueDate != nil {
		t.Fatalf("items %+v", out.Items)
	}

	srv.Enqueue(openaitest.Reply{Content: "Sure! Here they are:\n```json\n{\"items\":[]}\n```"})
	out, err = p.ActionItems(t.Context(), ai.ActionItemsRequest{Text: "Nothing to do.", Reference: ref})
	if err != nil || out.Items == nil || len(out.Items) != 0 {
		t.Fatalf("wrapped empty list: %+v %v", out, err)
	}
	srv.Enqueue(openaitest.Reply{Content: "I could not find any."})
	_, err = p.ActionItems(t.Context(), ai.ActionItemsRequest{Text: "x", Reference: ref})
	var pe *ai.ProviderError
	if !errors.As(err, &pe) || pe.Type != ai.ErrTypeBadOutput || !pe.Retryable() {
		t.Fatalf("prose instead of JSON: %v", err)
	}
}

func TestNarrateSendsTheComputedNumbers(t *testing.T) {
	srv := openaitest.New(t)
	p := newProvider(srv, 5*time.Second)
	tab, _ := aidata.Parse("region,revenue\nNorth,10\nSouth,30\n", "")
	a, _ := aidata.Analyze(tab, aidata.Options{GroupBy: "region"})
	srv.Enqueue(openaitest.Reply{Content: "South leads with 30.", NoUsage: true})
	out, err := p.Narrate(t.Context(), ai.NarrateRequest{Question: "Which region leads?", Analysis: a})
	if err != nil || out.Text != "South leads with 30." {
		t.Fatalf("%+v %v", out, err)
	}
	prompt := openaitest.Prompt(srv.Requests()[0])
	for _, want := range []string{"Question: Which region leads?", `"sum":40`, `"group_by":"region"`, "do not compute new ones"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if out.Usage.PromptTokens == 0 || out.Usage.CompletionTokens != int64(ai.CountTokens("South leads with 30.")) {
		t.Fatalf("usage without a report is not counted: %+v", out.Usage)
	}
}
