package web

import (
	"bytes"
	"encoding/json"
	"strings"
)

// containsNUL tells whether a JSON value holds a string with a NUL
// character (written \u0000 in JSON): PostgreSQL cannot store it in text,
// so a body carrying one is refused with a 422 rather than failing in the
// database.
func containsNUL(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return false // the only way JSON can spell NUL
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
}
