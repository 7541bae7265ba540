package ai

import (
	"unicode"
)

// CountTokens approximates how many tokens a BPE tokenizer (such as
// OpenAI's cl100k) makes of s, without shipping a vocabulary: within each
// run of letters and digits, ASCII letters count one token per 6 (rounded
// up; most English words are one token), digits one per 3 (numbers are
// split into groups of up to three digits), and every other letter one
// (accented and non-Latin text tokenizes finely); each punctuation mark or
// symbol counts one; whitespace counts nothing. It approximates cl100k on
// English prose and errs high on long and non-English words, the safe side
// for chunk sizes and quotas. Providers that report usage are billed by their report.
func CountTokens(s string) int {
	n := 0
	ascii, digits := 0, 0
	flush := func() {
		n += (ascii+5)/6 + (digits+2)/3
		ascii, digits = 0, 0
	}
	for _, r := range s {
		switch {
		case r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			ascii++
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLetter(r) || unicode.IsMark(r):
			n++
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}
