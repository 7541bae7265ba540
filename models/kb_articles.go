package models

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/text/unicode/norm"
)

// Knowledge-base articles are written in Markdown (GitHub flavour) and
// stored next to their rendering. Rendering happens on write, so reads,
// public ones included, serve stored HTML.
//
// goldmark passes inline HTML through (authors may use what the policy
// allows, such as <sup>, <sub>, <details> or <img>), and bluemonday's
// user-generated-content policy is the one sanitiser: it drops <script>,
// <style>, event handlers (onerror=…), javascript: URLs and anything else
// outside its allow-list, and adds rel="nofollow" to links. Both are safe
// for concurrent use once built.
var (
	kbMarkdown = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
	)
	kbPolicy = bluemonday.UGCPolicy()
)

// RenderMarkdown turns an article body into sanitised HTML.
func RenderMarkdown(src string) (string, error) {
	var buf bytes.Buffer
	if err := kbMarkdown.Convert([]byte(src), &buf); err != nil {
		return "", err
	}
	return kbPolicy.Sanitize(buf.String()), nil
}

// MaxSlugLen is the longest slug accepted or derived.
const MaxSlugLen = 100

// Slugify derives a slug from a name or title: accents are dropped
// ("Café" → "cafe"), ASCII letters are lower-cased, and every run of other
// characters becomes one hyphen, trimmed at both ends and cut to
// MaxSlugLen. The result may be "" when text has no ASCII letter or digit.
func Slugify(text string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(text) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue // a combining accent of the letter before it
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
		default:
			hyphen = b.Len() > 0
			continue
		}
		if hyphen {
			if b.Len()+1 >= MaxSlugLen {
				break
			}
			b.WriteByte('-')
			hyphen = false
		}
		if b.Len() >= MaxSlugLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ValidSlug tells whether s matches ^[a-z0-9]+(-[a-z0-9]+)*$ and is at most
// MaxSlugLen long.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLen || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
