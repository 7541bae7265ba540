package web

import (
	"bytes"
	"encoding/json"
)

// Nullable is a request field that tells apart "not sent" (keep the value),
// null (clear it) and a value, where a *T cannot: encoding/json turns both
// an absent field and null into a nil pointer. Use it where clearing has
// consequences, so that only an explicit null clears (an empty string, e.g.
// an unset shell variable, is then refused by the field's rules).
type Nullable[T any] struct {
	Set   bool // the field was in the body
	Null  bool // it was null
	Value T    // the value, when Set and not Null
}

// UnmarshalJSON records that the field was sent, and whether as null.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// HasValue tells whether a value (not null) was sent.
func (n Nullable[T]) HasValue() bool { return n.Set && !n.Null }
