package main

import (
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/activities/ai/openaicompat"
)

// No OPENAI_API_KEY: the local provider (what `suite dev` uses). A key:
// the OpenAI-compatible provider with the configured model, timeout and
// chunk size.
func TestAIProviderFollowsTheConfiguration(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.AIProvider().(*ai.Local); !ok {
		t.Fatalf("without a key: %T", cfg.AIProvider())
	}
	t.Setenv("OPENAI_API_KEY", "sk-live-secret")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_MODEL", "llama-3.1-8b")
	t.Setenv("OPENAI_TIMEOUT", "45s")
	t.Setenv("OPENAI_CHUNK_TOKENS", "2000")
	if cfg, err = LoadConfig(); err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.AIProvider().(*openaicompat.Provider)
	if !ok {
		t.Fatalf("with a key: %T", cfg.AIProvider())
	}
	if info := p.Info(); info.Name != "openai" || info.Model != "llama-3.1-8b" || info.CallTimeout != 45*time.Second || info.ChunkTokens != 2000 {
		t.Fatalf("info %+v", info)
	}
	for _, attr := range cfg.LogAttrs() {
		if strings.Contains(attr.(interface{ String() string }).String(), "sk-live-secret") {
			t.Fatal("the OpenAI key is logged")
		}
	}
	t.Setenv("OPENAI_CHUNK_TOKENS", "10")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "OPENAI_CHUNK_TOKENS") {
		t.Fatalf("a tiny chunk size: %v", err)
	}
}
