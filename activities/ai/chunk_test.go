package ai_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models/aidata"
)

func TestCountTokensApproximatesBPE(t *testing.T) {
	cases := map[string]int{
		"": 0,
		"The quick brown fox jumps over the lazy dog.": 10,
		"internationalization":                         4,
		"2026-03-04":                                   6,
		"Müller":                                       2,
		"日本語":                                          3,
	}
	for s, want := range cases {
		if got := ai.CountTokens(s); got != want {
			t.Errorf("%q: %d tokens, want %d", s, got, want)
		}
	}
}

func TestSplitChunksCoversTheTextWithOverlap(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "[2026-03-%02d 10:00] Agent %d (agent):\nReply number %d explains step %d of the migration in detail.\n\n", i%28+1, i, i, i)
	}
	text := b.String()
	if one := ai.SplitChunks("short text", 100, 10); len(one) != 1 || one[0].Text != "short text" {
		t.Fatalf("a text that fits: %+v", one)
	}
	chunks := ai.SplitChunks(text, 120, 20)
	if len(chunks) < 5 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks {
		if c.Tokens > 120+12 || c.Tokens != ai.CountTokens(c.Text) {
			t.Errorf("chunk %d has %d tokens", i, c.Tokens)
		}
		if !strings.HasPrefix(c.Text, "[2026-03-") {
			t.Errorf("chunk %d does not say who wrote it: %q", i, c.Text[:40])
		}
	}
	for i := range 60 {
		if !strings.Contains(strings.Join(chunkTexts(chunks), "\n"), fmt.Sprintf("Reply number %d explains", i)) {
			t.Fatalf("reply %d is in no chunk", i)
		}
	}
	// Each chunk starts with the end of the one before.
	for i := 1; i < len(chunks); i++ {
		prev := chunks[i-1].Text
		lastLine := prev[strings.LastIndex(strings.TrimRight(prev, "\n"), "\n")+1:]
		if !strings.Contains(chunks[i].Text, strings.TrimSpace(lastLine)) {
			t.Errorf("chunk %d does not overlap chunk %d (%q)", i, i-1, lastLine)
		}
	}
}

func TestSplitChunksCutsOneHugeParagraph(t *testing.T) {
	sentence := "This sentence has exactly nine words in it. "
	text := strings.Repeat(sentence, 200) + strings.Repeat("word ", 500)
	chunks := ai.SplitChunks(text, 100, 0)
	total := 0
	for _, c := range chunks {
		if c.Tokens > 100 {
			t.Fatalf("chunk of %d tokens", c.Tokens)
		}
		for _, f := range strings.Fields(c.Text) {
			if f == "word" {
				total++
			}
		}
	}
	if total < 500 {
		t.Fatalf("lost words: %d of the trailing 500 found", total)
	}
}

func chunkTexts(cs []ai.Chunk) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

func TestLocalNarrativeAnswersFromTheNumbers(t *testing.T) {
	tab, err := aidata.Parse("date,region,revenue\n2026-01-05,North,1200\n2026-01-12,South,900\n2026-01-19,North,1500\n2026-02-02,North,1800\n2026-02-09,South,1600\n", "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := aidata.Analyze(tab, aidata.Options{GroupBy: "region"})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"Which region has the most revenue?": "region North, with revenue a total of 4,500 (64% of all revenue).",
		"Which region sells the least?":      "region South, with revenue a total of 2,500 (36% of all revenue).",
		"Is revenue growing over time?":      "revenue rises over date",
		"What is the average revenue?":       "the average revenue is 1,400.",
		"What is the total revenue?":         "the total revenue is 7,000.",
		"Who is the CEO?":                    "cannot answer it directly",
	} {
		out, err := ai.NewLocal().Narrate(t.Context(), ai.NarrateRequest{Question: q, Analysis: a})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Text, want) || !strings.Contains(out.Text, "The data has 5 rows and 3 columns (1 numeric).") {
			t.Errorf("%q:\n%s\nwant %q", q, out.Text, want)
		}
	}
}

func TestTemporalErrorCarriesRetryPolicy(t *testing.T) {
	rate := ai.TemporalError(&ai.ProviderError{Type: ai.ErrTypeRateLimited, Status: 429, Message: "slow down", RetryAfter: 7 * time.Second})
	var appErr *temporal.ApplicationError
	if !errors.As(rate, &appErr) || appErr.Type() != ai.ErrTypeRateLimited || appErr.NonRetryable() || appErr.NextRetryDelay() != 7*time.Second {
		t.Fatalf("429: %v", rate)
	}
	capped := ai.TemporalError(&ai.ProviderError{Type: ai.ErrTypeUnavailable, Status: 503, RetryAfter: time.Hour})
	if errors.As(capped, &appErr); appErr.NextRetryDelay() != ai.MaxRetryAfter {
		t.Fatalf("Retry-After is not capped: %v", appErr.NextRetryDelay())
	}
	for _, typ := range []string{ai.ErrTypeRejected, ai.ErrTypeUnauthorized} {
		err := ai.TemporalError(&ai.ProviderError{Type: typ, Status: 400})
		if !errors.As(err, &appErr) || !appErr.NonRetryable() {
			t.Fatalf("%s is retryable", typ)
		}
	}
	plain := errors.New("database down")
	if ai.TemporalError(plain) != plain {
		t.Fatal("other errors must pass through")
	}
}
