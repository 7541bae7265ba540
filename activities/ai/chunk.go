package ai

import (
	"strings"
)

// Chunk is one part of a long document.
type Chunk struct {
	// Text is the part, preceded by the entry header it continues (e.g.
	// "[2026-03-02 14:05] Dana Smith (agent):") when it starts inside an
	// entry, so that every part says who wrote it and when.
	Text   string
	Tokens int
}

// span is a piece of the text: [start, end) in bytes, with its tokens.
type span struct {
	start, end, tokens int
}

// SplitChunks splits text into chunks of at most maxTokens tokens
// (CountTokens), each starting with the last overlap tokens of the one
// before. Cuts fall between lines where possible, else between sentences,
// else between words. A text that fits is one chunk.
func SplitChunks(text string, maxTokens, overlap int) []Chunk {
	if maxTokens < 16 {
		maxTokens = 16
	}
	overlap = max(0, min(overlap, maxTokens/2))
	if CountTokens(text) <= maxTokens {
		return []Chunk{{Text: text, Tokens: CountTokens(text)}}
	}
	spans := splitSpans(text, maxTokens)
	var chunks []Chunk
	for i := 0; i < len(spans); {
		j, total := i, 0
		for j < len(spans) && (j == i || total+spans[j].tokens <= maxTokens) {
			total += spans[j].tokens
			j++
		}
		body := text[spans[i].start:spans[j-1].end]
		if h := headerBefore(text, spans[i].start); h != "" && CountTokens(h)+total <= maxTokens+maxTokens/10 {
			body = h + "\n" + body
		}
		chunks = append(chunks, Chunk{Text: body, Tokens: CountTokens(body)})
		if j == len(spans) {
			break
		}
		// Start the next chunk overlap tokens back, but always move on.
		k, back := j, 0
		for k-1 > i && back+spans[k-1].tokens <= overlap {
			k--
			back += spans[k].tokens
		}
		i = k
	}
	return chunks
}

// splitSpans cuts text into lines, lines longer than maxTokens into
// sentences, and sentences longer than that into runs of words.
func splitSpans(text string, maxTokens int) []span {
	var out []span
	pos := 0
	for line := range strings.SplitAfterSeq(text, "\n") {
		start := pos
		pos += len(line)
		if strings.TrimSpace(line) == "" {
			continue
		}
		if n := CountTokens(line); n <= maxTokens {
			out = append(out, span{start, start + len(line), n})
			continue
		}
		out = append(out, splitLong(text, start, start+len(line), maxTokens)...)
	}
	return out
}

func splitLong(text string, start, end, maxTokens int) []span {
	var out []span
	line := text[start:end]
	off := 0
	for _, s := range splitSentences(line) {
		i := strings.Index(line[off:], s)
		if i < 0 {
			continue
		}
		sStart := start + off + i
		off += i + len(s)
		if n := CountTokens(s); n <= maxTokens {
			out = append(out, span{sStart, sStart + len(s), n})
			continue
		}
		out = append(out, splitWords(text, sStart, sStart+len(s), maxTokens)...)
	}
	return out
}

// splitWords cuts one enormous sentence into runs of whole words.
func splitWords(text string, start, end, maxTokens int) []span {
	var out []span
	cur, acc, i := start, 0, start
	for i < end {
		for i < end && isSpace(text[i]) {
			i++
		}
		j := i
		for j < end && !isSpace(text[j]) {
			j++
		}
		if j == i {
			break
		}
		n := CountTokens(text[i:j])
		if acc > 0 && acc+n > maxTokens {
			out = append(out, span{cur, i, acc})
			cur, acc = i, 0
		}
		acc += n
		i = j
	}
	if acc > 0 {
		out = append(out, span{cur, end, acc})
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// headerBefore returns the entry header line ("[stamp] Name (role):") that
// the text at pos continues, or "" when there is none or pos starts a
// header itself.
func headerBefore(text string, pos int) string {
	lineStart := strings.LastIndex(text[:pos], "\n") + 1
	if lineStart == pos {
		cur, _, _ := strings.Cut(text[pos:], "\n")
		if stampLine.MatchString(strings.TrimSpace(cur)) {
			return ""
		}
	}
	for end := lineStart; end > 0; {
		s := strings.LastIndex(text[:end-1], "\n") + 1
		line := strings.TrimSpace(text[s:end])
		if stampLine.MatchString(line) {
			if strings.HasSuffix(line, ":") {
				return line
			}
			return ""
		}
		end = s
	}
	return ""
}
