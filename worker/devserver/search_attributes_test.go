package devserver

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/worker/ports"
)

// A data file whose namespace was created with the search attributes has
// them at the next start (no refresh on every read); a namespace that
// lacks one of them — another namespace, or an attribute added since —
// does not (the server refreshes on every read).
func TestSearchAttributesRegisteredReadsTheNamespace(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "temporal.db")
	port, err := ports.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]enumspb.IndexedValueType{"OrgId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "Kind": enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	srv, err := Start(Options{DBPath: dbPath, FrontendAddr: fmt.Sprintf("127.0.0.1:%d", port), SearchAttributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	aliases, err := prepareFile(dbPath) // what the next start reads
	if err != nil {
		t.Fatal(err)
	}
	grown := map[string]enumspb.IndexedValueType{"Region": enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	for name, typ := range attrs {
		grown[name] = typ
	}
	for _, c := range []struct {
		namespace string
		names     map[string]enumspb.IndexedValueType
		want      bool
	}{
		{"default", attrs, true},
		{"default", grown, false},
		{"other", attrs, false},
	} {
		if got := hasSearchAttributes(aliases[c.namespace], c.names); got != c.want {
			t.Errorf("namespace %s, %v: registered %v, want %v", c.namespace, c.names, got, c.want)
		}
	}
}
