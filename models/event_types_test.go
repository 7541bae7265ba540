package models_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/business-suite/suite/models"
)

// documentedEventTypes are the types docs/openapi.yaml lists as delivered
// (POST /crm/organization/{id}/webhooks): `group.a|b|c` stands for
// group.a, group.b and group.c.
func documentedEventTypes(t *testing.T, root string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "Delivered today:")
	end := strings.Index(text[start:], "`webhook.test`")
	if start < 0 || end < 0 {
		t.Fatal("docs/openapi.yaml: no list of delivered event types (\"Delivered today: … `webhook.test`\")")
	}
	var types []string
	for _, m := range regexp.MustCompile("`([a-z_]+(?:\\.[a-z_]+)+(?:\\|[a-z_]+)*)`").FindAllStringSubmatch(text[start:start+end], -1) {
		alts := strings.Split(m[1], "|")
		prefix := alts[0][:strings.LastIndex(alts[0], ".")+1]
		types = append(types, alts[0])
		for _, a := range alts[1:] {
			types = append(types, prefix+a)
		}
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// Every event type is decided in models/event_types.go: the documented
// list is models.EventTypes, no other production file spells a type as a
// string, and each type is emitted — its constant, or the function there
// that decides it, is used by a production call site outside models.
func TestEveryEventTypeIsDocumentedAndEmitted(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(models.EventTypes))
	if got := documentedEventTypes(t, root); !slices.Equal(got, want) {
		t.Fatalf("docs/openapi.yaml delivers %v,\nmodels.EventTypes are %v", got, want)
	}

	// The constants and deciding functions of event_types.go, by name.
	fset := token.NewFileSet()
	decl, err := parser.ParseFile(fset, "event_types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	constOf := map[string]string{}   // EventX -> type
	decides := map[string][]string{} // deciding function -> the constants it returns
	for _, d := range decl.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				if v, ok := spec.(*ast.ValueSpec); ok && d.Tok == token.CONST {
					for i, n := range v.Names {
						constOf[n.Name], _ = strconv.Unquote(v.Values[i].(*ast.BasicLit).Value)
					}
				}
			}
		case *ast.FuncDecl:
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && strings.HasPrefix(id.Name, "Event") {
					decides[d.Name.Name] = append(decides[d.Name.Name], id.Name)
				}
				return true
			})
		}
	}

	used := map[string]int{} // constant -> production call sites outside models
	var spelled []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == filepath.Join("models", "event_types.go") ||
			strings.HasPrefix(rel, "cmd"+string(filepath.Separator)) { // cmd/bench subscribes a receiver to a type
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING &&
					(slices.Contains(models.EventTypes, s) || strings.HasPrefix(s, "ai.job.")) {
					spelled = append(spelled, fset.Position(n.Pos()).String()+" "+n.Value)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "models" {
					if _, ok := constOf[n.Sel.Name]; ok {
						used[n.Sel.Name]++
					}
					for _, c := range decides[n.Sel.Name] {
						used[c]++
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spelled {
		t.Errorf("%s: an event type spelled outside models/event_types.go", s)
	}
	for name, typ := range constOf {
		if slices.Contains(models.EventTypes, typ) && used[name] == 0 {
			t.Errorf("%s (%s) is documented but no production code emits it", typ, name)
		}
	}
}
