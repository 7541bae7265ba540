package models

import (
	"encoding/json"
	"testing"
)

// A value converts to the reading of it the new type takes, and is
// cleared when none fits; converting a converted value changes nothing
// (a FieldChange batch retried after its commit rewrites nothing again).
func TestConvertFieldValues(t *testing.T) {
	cases := []struct {
		to, options string
		in          any
		want        string // JSON; "" when cleared
	}{
		{FieldNumber, "", "12", "12"},
		{FieldNumber, "", " 7.6 ", "8"},
		{FieldNumber, "", "twelve", ""},
		{FieldNumber, "", 2.5, "3"},
		{FieldDecimal, "", "7.25", "7.25"},
		{FieldText, "", 12.0, `"12"`},
		{FieldText, "", 0.5, `"0.5"`},
		{FieldText, "", true, `"true"`},
		{FieldText, "", []any{"eu", "us"}, `"eu, us"`},
		{FieldBool, "", "Yes", "true"},
		{FieldBool, "", 0.0, "false"},
		{FieldBool, "", "maybe", ""},
		{FieldDate, "", "2026-03-01T10:00:00Z", `"2026-03-01"`},
		{FieldDateTime, "", "2026-03-01", `"2026-03-01T00:00:00Z"`},
		{FieldSelect, `["gold","free"]`, "gold", `"gold"`},
		{FieldSelect, `["gold","free"]`, []any{"free"}, `"free"`},
		{FieldSelect, `["gold","free"]`, "silver", ""},
		{FieldMultiSelect, `["eu","us"]`, "eu", `["eu"]`},
		{FieldMultiSelect, `["eu","us"]`, []any{"us", "apac"}, ""},
		{FieldEmail, "", " Bob@Example.com", `"bob@example.com"`},
		{FieldPhone, "", "+1 415 555 0100", `"+14155550100"`},
		{FieldURL, "", "not a url", ""},
	}
	for _, c := range cases {
		f := CustomField{Key: "k", Type: c.to, Options: c.options}
		got, ok := f.Convert(c.in)
		text := ""
		if ok {
			b, _ := json.Marshal(got)
			text = string(b)
		}
		if text != c.want {
			t.Errorf("%v to %s: %s, want %s", c.in, c.to, text, c.want)
			continue
		}
		if !ok {
			continue
		}
		var back any
		_ = json.Unmarshal([]byte(text), &back)
		if again, ok := f.Convert(back); !ok || !(FieldValues{"v": again}).Equal(FieldValues{"v": back}) {
			t.Errorf("%v to %s: converting %s again gave %v", c.in, c.to, text, again)
		}
	}
	long := make([]rune, 1500)
	for i := range long {
		long[i] = 'a'
	}
	if got, ok := (&CustomField{Type: FieldText}).Convert(string(long)); !ok || len(got.(string)) != 1000 {
		t.Errorf("a long text as text: %v", ok)
	}
}
