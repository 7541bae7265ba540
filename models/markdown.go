package models

import (
	"html"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

var (
	// plainMarkdown parses knowledge-base Markdown the way the renderer
	// does (GitHub flavour), for MarkdownText.
	plainMarkdown = goldmark.New(goldmark.WithExtensions(extension.GFM))
	// stripTags keeps the text of raw HTML blocks and drops the tags (and
	// the contents of <script> and <style>).
	stripTags = bluemonday.StrictPolicy().AddSpaceWhenStrippingTag(true)
)

// MarkdownText is the plain text of a Markdown document: what a reader
// sees, without emphasis markers, link targets, code fences or HTML tags.
// Blocks end in a newline and soft line breaks become spaces, so words
// never run together. Knowledge-base search indexes this text and cuts its
// snippets from it, so a highlight never lands inside Markdown syntax.
func MarkdownText(src string) string {
	source := []byte(src)
	doc := plainMarkdown.Parser().Parse(text.NewReader(source))
	var b strings.Builder
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n := n.(type) {
		case *ast.Text:
			if entering {
				v := n.Value(source)
				if !n.IsRaw() { // resolve \* escapes and &amp; references as the renderer does
					v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
				}
				b.Write(v)
				if n.SoftLineBreak() || n.HardLineBreak() {
					b.WriteByte(' ')
				}
			}
			return ast.WalkContinue, nil
		case *ast.String:
			if entering {
				b.Write(n.Value)
			}
			return ast.WalkContinue, nil
		case *ast.AutoLink:
			if entering {
				b.Write(n.Label(source))
			}
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil // inline tags; the text between them are Text nodes
		case *ast.HTMLBlock:
			if entering {
				var raw strings.Builder
				lines := n.Lines()
				for i := range lines.Len() {
					seg := lines.At(i)
					raw.Write(seg.Value(source))
				}
				if n.HasClosure() {
					raw.Write(n.ClosureLine.Value(source))
				}
				b.WriteString(html.UnescapeString(stripTags.Sanitize(raw.String())))
				b.WriteByte('\n')
			}
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			if entering {
				lines := n.Lines()
				for i := range lines.Len() {
					seg := lines.At(i)
					b.Write(seg.Value(source))
				}
				b.WriteByte('\n')
			}
			return ast.WalkSkipChildren, nil
		}
		if !entering && n.Type() == ast.TypeBlock {
			b.WriteByte('\n')
		} else if !entering && n.Kind() == ast.KindImage {
			b.WriteByte(' ')
		}
		return ast.WalkContinue, nil
	})
	return tidySpace(b.String())
}

// tidySpace collapses runs of spaces within lines and of empty lines
// between them.
func tidySpace(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := true // drops leading empty lines
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
