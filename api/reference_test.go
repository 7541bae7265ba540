package api_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/docs"
	"github.com/business-suite/suite/internal/database"
)

// TestReferenceRoutes checks what the server sends for the reference: the
// pointer from /, the document in both encodings, and the viewer page with
// every file it loads, revalidated by ETag. TestReferenceInABrowser checks
// what a browser makes of them.
func TestReferenceRoutes(t *testing.T) {
	e := apitest.New(t, database.SQLite)

	root := e.Do(apitest.Request{Method: "GET", Path: "/"}).Expect(302)
	if root.Header.Get("Location") != "/docs" {
		t.Fatalf("GET / points to %q", root.Header.Get("Location"))
	}
	yaml := e.Do(apitest.Request{Method: "GET", Path: "/openapi.yaml"}).Expect(200)
	if !bytes.Equal(yaml.Body, docs.OpenAPI) || !strings.HasPrefix(yaml.Header.Get("Content-Type"), "application/yaml") {
		t.Fatalf("/openapi.yaml is not docs/openapi.yaml (%s)", yaml.Header.Get("Content-Type"))
	}

	page := e.Do(apitest.Request{Method: "GET", Path: "/docs"}).Expect(200)
	csp := page.Header.Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, directive) {
			t.Errorf("/docs Content-Security-Policy %q lacks %q", csp, directive)
		}
	}
	// Every file the page loads is served, with its type.
	wantType := map[string]string{".js": "text/javascript", ".css": "text/css"}
	refs := regexp.MustCompile(`(?:src|href)="(/docs/assets/[^"]+)"`).FindAllStringSubmatch(string(page.Body), -1)
	if len(refs) != 3 {
		t.Fatalf("the page loads %d files, want the bundle, its style sheet and init.js:\n%s", len(refs), page.Body)
	}
	for _, ref := range refs {
		asset := e.Do(apitest.Request{Method: "GET", Path: ref[1]}).Expect(200)
		ext := ref[1][strings.LastIndex(ref[1], "."):]
		if ct := asset.Header.Get("Content-Type"); !strings.HasPrefix(ct, wantType[ext]) {
			t.Errorf("%s: Content-Type %q", ref[1], ct)
		}
		if len(asset.Body) == 0 || asset.Header.Get("ETag") == "" {
			t.Errorf("%s: %d bytes, ETag %q", ref[1], len(asset.Body), asset.Header.Get("ETag"))
		}
		e.Do(apitest.Request{Method: "GET", Path: ref[1], Headers: map[string]string{"If-None-Match": asset.Header.Get("ETag")}}).Expect(304)
	}
	// The viewer reads this suite's document and nothing else.
	init := e.Do(apitest.Request{Method: "GET", Path: "/docs/assets/init.js"}).Expect(200)
	for _, want := range []string{`url: "/openapi.yaml"`, "validatorUrl: null", "queryConfigEnabled: false"} {
		if !bytes.Contains(init.Body, []byte(want)) {
			t.Errorf("init.js lacks %s", want)
		}
	}
	// Its licence ships with it.
	licence := e.Do(apitest.Request{Method: "GET", Path: "/docs/assets/LICENSE"}).Expect(200)
	if !bytes.Contains(licence.Body, []byte("Apache License")) {
		t.Error("/docs/assets/LICENSE is not Swagger UI's licence")
	}
	e.Do(apitest.Request{Method: "GET", Path: "/docs/assets/nothing.js"}).ExpectProblem(404, "not_found")
}
