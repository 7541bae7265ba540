// Package openaicompat is the AI provider for OpenAI's API and any server
// that speaks its chat-completions wire format (vLLM, Ollama, LiteLLM,
// Azure-style gateways), through github.com/sashabaranov/go-openai.
//
// Every call is bounded by a timeout. Failures are classified for the
// workflow's retry policy: 429 (with its Retry-After), 5xx, timeouts and
// connection errors are retryable; 400 and other 4xx fail the job at once,
// 401/403 with a message that points the operator at OPENAI_API_KEY.
package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
)

// Config configures the provider.
type Config struct {
	APIKey string
	// BaseURL defaults to OpenAI's (https://api.openai.com/v1).
	BaseURL string
	Model   string
	// Timeout bounds one call (default 60 s).
	Timeout time.Duration
	// ChunkTokens is the most document tokens sent in one call (default
	// 3000); longer documents are summarized in parts.
	ChunkTokens int
	// HTTPClient overrides the transport (tests); nil uses a fresh client.
	HTTPClient *http.Client
}

// Provider calls an OpenAI-compatible chat-completions endpoint.
type Provider struct {
	client *openai.Client
	cfg    Config
}

// New creates the provider.
func New(cfg Config) *Provider {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.ChunkTokens <= 0 {
		cfg.ChunkTokens = 3000
	}
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	base := cfg.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	oc.HTTPClient = retryAfterDoer{base: base}
	return &Provider{client: openai.NewClientWithConfig(oc), cfg: cfg}
}

// Info describes the provider.
func (p *Provider) Info() ai.Info {
	return ai.Info{Name: "openai", Model: p.cfg.Model, ChunkTokens: p.cfg.ChunkTokens,
		ChunkOverlap: p.cfg.ChunkTokens / 20, CallTimeout: p.cfg.Timeout}
}

const systemPrompt = "You work inside a business suite (CRM, helpdesk). You process business documents: support ticket threads, " +
	"CRM records, meeting notes. Use only facts stated in the text you are given; never invent names, numbers or dates. " +
	"Answer in the language of the text, without preamble."

// Summarize asks the model for a summary of the requested length; a part
// of a long document gets a compact summary of its own, and the combining
// call turns the part summaries into one.
func (p *Provider) Summarize(ctx context.Context, req ai.SummarizeRequest) (ai.Completion, error) {
	spec := ai.LengthOf(req.Length)
	var prompt string
	maxTokens := spec.Words * 3
	switch {
	case req.Combine:
		prompt = fmt.Sprintf("These are summaries of the consecutive parts of one document. Write a single summary of the whole "+
			"document in at most %d sentences (about %d words). Keep problems, causes, decisions, outcomes, names, figures and dates.\n\n%s",
			spec.Max, spec.Words, req.Text)
	case req.Parts > 1:
		prompt = fmt.Sprintf("This is part %d of %d of a longer document. Summarize this part in at most 6 sentences, keeping "+
			"problems, causes, decisions, outcomes, names, figures and dates.\n\n%s", req.Part, req.Parts, req.Text)
		maxTokens = 400
	default:
		prompt = fmt.Sprintf("Summarize the following document in at most %d sentences (about %d words). Lead with what it is about, "+
			"then problems, causes, decisions and where things stand.\n\n%s", spec.Max, spec.Words, req.Text)
	}
	text, usage, err := p.chat(ctx, prompt, maxTokens, false)
	return ai.Completion{Text: text, Usage: usage}, err
}

// ActionItems asks the model for the action items as JSON and keeps the
// well-formed ones (a due date that is not YYYY-MM-DD is dropped).
func (p *Provider) ActionItems(ctx context.Context, req ai.ActionItemsRequest) (ai.ActionItemsResult, error) {
	ref := req.Reference
	prompt := fmt.Sprintf("List the action items in the text below: things someone has to do (requests, commitments, to-dos). "+
		"Answer with JSON only, in this form: {\"items\":[{\"text\":\"...\",\"owner\":\"name or null\",\"due_date\":\"YYYY-MM-DD or null\"}]}. "+
		"Quote each item's wording closely. The owner is the person who has to act, when the text names them. Resolve relative dates "+
		"(\"by Friday\", \"tomorrow\", \"next week\") against the date of the message they appear in, or else against %s (a %s). "+
		"Answer {\"items\":[]} when there are none.\n\n%s", ref.Format(time.DateOnly), ref.Weekday(), req.Text)
	text, usage, err := p.chat(ctx, prompt, 1200, true)
	if err != nil {
		return ai.ActionItemsResult{Usage: usage}, err
	}
	items, err := parseItems(text)
	if err != nil {
		return ai.ActionItemsResult{Usage: usage}, &ai.ProviderError{Type: ai.ErrTypeBadOutput,
			Message: "the model did not answer with the JSON list of action items asked for", Err: err}
	}
	return ai.ActionItemsResult{Items: items, Usage: usage}, nil
}

// Narrate gives the model the computed numbers and the question; it is
// told not to compute figures of its own.
func (p *Provider) Narrate(ctx context.Context, req ai.NarrateRequest) (ai.Completion, error) {
	stats, err := json.Marshal(req.Analysis)
	if err != nil {
		return ai.Completion{}, err
	}
	question := req.Question
	if question == "" {
		question = "What do these figures show?"
	}
	prompt := fmt.Sprintf("Below are statistics computed in code from a table (per column: count, sum, mean, min, max, and a "+
		"least-squares trend; per group when grouped). Write a short narrative (at most 150 words) that answers the question using "+
		"only these numbers. Quote figures as given; do not compute new ones. If the numbers cannot answer the question, say so.\n\n"+
		"Question: %s\n\nStatistics (JSON):\n%s", question, stats)
	text, usage, err := p.chat(ctx, prompt, 500, false)
	return ai.Completion{Text: text, Usage: usage}, err
}

// chat makes one chat-completions call within the timeout.
func (p *Provider) chat(ctx context.Context, prompt string, maxTokens int, jsonOut bool) (string, ai.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	var hint retryHint
	ctx = context.WithValue(ctx, retryHintKey{}, &hint)
	req := openai.ChatCompletionRequest{
		Model: p.cfg.Model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
			{Role: openai.ChatMessageRoleUser, Content: prompt},
		},
		MaxCompletionTokens: maxTokens,
	}
	if jsonOut {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	resp, err := p.client.CreateChatCompletion(ctx, req)
	if err != nil {
		return "", ai.Usage{}, classify(ctx, err, hint.delay)
	}
	usage := ai.Usage{PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens), Calls: 1}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Message.Content) == "" {
		return "", usage, &ai.ProviderError{Type: ai.ErrTypeBadOutput, Message: "the model returned no text"}
	}
	text := strings.TrimSpace(resp.Choices[0].Message.Content)
	if resp.Usage.PromptTokens == 0 && resp.Usage.CompletionTokens == 0 {
		// Some compatible servers report no usage; count it ourselves so
		// quotas still hold.
		usage.PromptTokens = int64(ai.CountTokens(systemPrompt) + ai.CountTokens(prompt))
		usage.CompletionTokens = int64(ai.CountTokens(text))
	}
	return text, usage, nil
}

// classify maps a go-openai error to a ProviderError.
func classify(ctx context.Context, err error, retryAfter time.Duration) error {
	status, detail := 0, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, detail = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	pe := &ai.ProviderError{Status: status, RetryAfter: retryAfter, Err: err}
	var netErr net.Error
	switch {
	case status == http.StatusTooManyRequests:
		pe.Type, pe.Message = ai.ErrTypeRateLimited, "the AI provider is rate limiting requests"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		pe.Type, pe.Message = ai.ErrTypeUnauthorized, "the AI provider refused the suite's credentials; the operator must check OPENAI_API_KEY"
	case status == http.StatusRequestTimeout || status >= 500:
		pe.Type, pe.Message = ai.ErrTypeUnavailable, fmt.Sprintf("the AI provider failed (HTTP %d)", status)
	case status >= 400:
		pe.Type, pe.Message = ai.ErrTypeRejected, fmt.Sprintf("the AI provider rejected the request (HTTP %d)", status)
		if detail != "" {
			pe.Message += ": " + truncate(detail, 300)
		}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || errors.As(err, &netErr) && netErr.Timeout():
		pe.Type, pe.Message = ai.ErrTypeTimeout, "the AI provider did not answer in time"
	default:
		pe.Type, pe.Message = ai.ErrTypeUnavailable, "the AI provider could not be reached"
	}
	return pe
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// parseItems reads the model's JSON answer, tolerating text around it.
func parseItems(text string) ([]models.AIActionItem, error) {
	start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || end < start {
		return nil, errors.New("no JSON object in the answer")
	}
	var out struct {
		Items []struct {
			Text    string  `json:"text"`
			Owner   *string `json:"owner"`
			DueDate *string `json:"due_date"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(text[start:end+1]), &out); err != nil {
		return nil, err
	}
	items := []models.AIActionItem{}
	for _, it := range out.Items {
		t := strings.TrimSpace(it.Text)
		if t == "" {
			continue
		}
		item := models.AIActionItem{Text: t}
		if it.Owner != nil && strings.TrimSpace(*it.Owner) != "" && !strings.EqualFold(*it.Owner, "null") {
			o := strings.TrimSpace(*it.Owner)
			item.Owner = &o
		}
		if it.DueDate != nil {
			if d, err := time.Parse(time.DateOnly, strings.TrimSpace(*it.DueDate)); err == nil {
				s := d.Format(time.DateOnly)
				item.DueDate = &s
			}
		}
		items = append(items, item)
	}
	return items, nil
}

// retryAfterDoer records the Retry-After of a refused call (go-openai's
// errors do not carry response headers) in a hint the call passes down in
// its context.
type retryAfterDoer struct{ base *http.Client }

type retryHintKey struct{}

type retryHint struct{ delay time.Duration }

func (d retryAfterDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.base.Do(req)
	if err == nil && resp.StatusCode >= 400 {
		if h, ok := req.Context().Value(retryHintKey{}).(*retryHint); ok {
			h.delay = parseRetryAfter(resp.Header, time.Now())
		}
	}
	return resp, err
}

// parseRetryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms; 0 when absent.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
