package api_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/business-suite/suite/api"
)

// TestEveryOperationIsDocumentedWithExamples keeps the reference useful as
// routes are added: every operation says who may call it, shows an example
// of each request body and of at least one response, every response with a
// body (problem+json errors included) shows one, and every example is valid
// against its schema — a problem example carries its response's status and
// a type that matches its code.
func TestEveryOperationIsDocumentedWithExamples(t *testing.T) {
	doc, err := api.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range sortedKeys(doc.Paths.Map()) {
		item := doc.Paths.Value(path)
		for _, method := range sortedKeys(item.Operations()) {
			op := item.GetOperation(method)
			name := method + " " + path
			if op.Security == nil {
				t.Errorf("%s: no security requirement (use `security: []` for a public operation)", name)
			}
			if op.RequestBody != nil {
				for _, mt := range sortedKeys(op.RequestBody.Value.Content) {
					checkExamples(t, name+" request body "+mt, "", op.RequestBody.Value.Content[mt])
				}
			}
			shown := 0
			for _, status := range sortedKeys(op.Responses.Map()) {
				resp := op.Responses.Value(status).Value
				for _, mt := range sortedKeys(resp.Content) {
					shown += checkExamples(t, name+" → "+status+" "+mt, status, resp.Content[mt])
				}
			}
			if shown == 0 {
				t.Errorf("%s: no response example", name)
			}
		}
	}
}

// checkExamples reports a media type without examples or with one its schema
// refuses, and returns how many examples it has.
func checkExamples(t *testing.T, where, status string, media *openapi3.MediaType) int {
	t.Helper()
	examples := map[string]any{}
	if media.Example != nil {
		examples["example"] = media.Example
	}
	for name, ex := range media.Examples {
		if ex.Value == nil || ex.Value.Value == nil {
			t.Errorf("%s: example %q has no value", where, name)
			continue
		}
		examples[name] = ex.Value.Value
	}
	if len(examples) == 0 {
		t.Errorf("%s: no example", where)
		return 0
	}
	for _, name := range sortedKeys(examples) {
		value := examples[name]
		if media.Schema != nil && media.Schema.Value != nil {
			if err := media.Schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("%s: example %q does not match the schema: %v", where, name, err)
			}
		}
		if strings.HasSuffix(where, " application/problem+json") {
			if err := problemMatches(value, status); err != nil {
				t.Errorf("%s: example %q: %v", where, name, err)
			}
		}
	}
	return len(examples)
}

// problemMatches checks that a problem example is one the API could send
// with that status.
func problemMatches(example any, status string) error {
	p, ok := example.(map[string]any)
	if !ok {
		return fmt.Errorf("not an object")
	}
	if want, err := strconv.Atoi(status); err != nil || p["status"] != float64(want) {
		return fmt.Errorf("status %v under response %s", p["status"], status)
	}
	if p["type"] != fmt.Sprint("urn:business-suite:problem:", p["code"]) {
		return fmt.Errorf("type %v does not match code %v", p["type"], p["code"])
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
