// Package openaitest is a test server that speaks OpenAI's chat-completions
// wire format: it decodes each request as the real API would receive it,
// answers with scripted replies (errors with Retry-After, slow answers) or
// a default one, and records what it was asked.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// APIKey is the key the server accepts.
const APIKey = "sk-test-key"

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status (default 200).
	Status int
	// Header is added to the response (e.g. Retry-After).
	Header map[string]string
	// Delay holds the answer back (a slow model); it ends early when the
	// client gives up.
	Delay time.Duration
	// Content is the assistant message of a 200; ErrorMessage the error
	// message otherwise.
	Content      string
	ErrorMessage string
	// NoUsage leaves usage out (some compatible servers do).
	NoUsage bool
}

// Server is the fake API. Its URL + "/v1" is the base URL to configure.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	requests []openai.ChatCompletionRequest
	// Default answers when the script is empty; nil uses DefaultReply.
	Default func(req openai.ChatCompletionRequest) Reply
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is what OPENAI_BASE_URL would be.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Enqueue scripts the next replies, in order.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.requests...)
}

// Calls is how many chat completions were requested.
func (s *Server) Calls() int { return len(s.Requests()) }

// Prompt is the user message of a request.
func Prompt(r openai.ChatCompletionRequest) string {
	for _, m := range r.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			return m.Content
		}
	}
	return ""
}

// DefaultReply answers like a model would: JSON action items when JSON is
// asked for, else a one-line "summary" naming the first words it was given.
func DefaultReply(req openai.ChatCompletionRequest) Reply {
	if req.ResponseFormat != nil && req.ResponseFormat.Type == openai.ChatCompletionResponseFormatTypeJSONObject {
		return Reply{Content: `{"items":[{"text":"Send the signed contract","owner":"Ana","due_date":"2026-03-06"},{"text":"Book the retro","owner":null,"due_date":"next week"}]}`}
	}
	p := Prompt(req)
	if i := strings.LastIndex(p, "\n\n"); i >= 0 {
		p = p[i+2:]
	}
	f := strings.Fields(p)
	return Reply{Content: "Model summary of: " + strings.Join(f[:min(6, len(f))], " ")}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.Method+" "+r.URL.Path, "invalid_request_error")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+APIKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error")
		return
	}
	var req openai.ChatCompletionRequest
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("malformed request: %v", err), "invalid_request_error")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var reply Reply
	if len(s.script) > 0 {
		reply, s.script = s.script[0], s.script[1:]
	} else if s.Default != nil {
		reply = s.Default(req)
	} else {
		reply = DefaultReply(req)
	}
	s.mu.Unlock()
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorMessage, "server_error")
		return
	}
	resp := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": reply.Content}}},
	}
	if !reply.NoUsage {
		prompt := 0
		for _, m := range req.Messages {
			prompt += len(strings.Fields(m.Content))
		}
		completion := len(strings.Fields(reply.Content))
		resp["usage"] = map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, msg, typ string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}
