package models

import (
	"testing"
)

// TestFieldValuesScan: the stored JSON object is read back as a map that a
// create or an update can write into, none (NULL, {}) as an empty one,
// whatever form the driver hands it in.
func TestFieldValuesScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  any
		want map[string]any
	}{
		{"NULL", nil, map[string]any{}},
		{"none, as text", "{}", map[string]any{}},
		{"none, as bytes", []byte("{}"), map[string]any{}},
		{"none, spaced", " { } ", map[string]any{}},
		{"values", []byte(`{"plan":"gold","seats":3,"vip":true}`), map[string]any{"plan": "gold", "seats": 3.0, "vip": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v FieldValues
			if err := v.Scan(tc.src); err != nil {
				t.Fatal(err)
			}
			if v == nil || !v.Equal(FieldValues(tc.want)) {
				t.Fatalf("scanned %#v, want %#v", v, tc.want)
			}
			v["written"] = "yes" // a nil map would panic here
		})
	}
	for _, bad := range []any{`[]`, `{"a":`, 42} {
		var v FieldValues
		if err := v.Scan(bad); err == nil {
			t.Errorf("%#v was scanned as %#v", bad, v)
		}
	}
}
