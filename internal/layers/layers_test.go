package layers_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module path that go.mod must declare; the rules name the
// suite's own packages under it.
const module = "github.com/business-suite/suite"

// rule forbids the production files under dir (a directory relative to the
// module root, with everything below it) but those under except to import
// the packages under forbidden (import paths, with everything below them).
type rule struct {
	dir string
	// except are directories below dir that the rule does not cover,
	// because a path under dir does not put a package in dir's layer
	// (models/views sits above models), or because one package of dir has
	// a reason of its own to import what the others must not
	// (internal/database is the suite's gorm). The rule's why says which.
	except    []string
	forbidden []string
	// allow are import paths under forbidden that the rule permits: a
	// leaf package of a layer above, which imports nothing of the suite
	// (workflows/names).
	allow []string
	why   string
}

var rules = []rule{
	{
		dir:       "api",
		forbidden: []string{module + "/worker", module + "/activities"},
		why:       "the API and the worker are siblings, and the API only records work for workflows; shared code belongs in internal/",
	},
	{
		dir:       "worker",
		forbidden: []string{module + "/api", module + "/models/views"},
		why:       "the worker and the API are siblings, shared code belongs in internal/; the worker shows no object: models/views is for the API and activities",
	},
	{
		dir:       "activities",
		forbidden: []string{module + "/api", module + "/worker"},
		why:       "activities sit below the API and the worker that registers them",
	},
	{
		dir: "workflows",
		forbidden: []string{module + "/api", module + "/worker", module + "/models/views", module + "/models/record",
			"gorm.io", "github.com/stripe", "github.com/sashabaranov/go-openai", "net/http"},
		why: "workflow code is deterministic orchestration: databases, Stripe, AI models and HTTP are reached through activities, and so are the objects a webhook event shows, models/views, and the recording of work, models/record",
	},
	{
		dir:       "workflows/names",
		forbidden: []string{module},
		why:       "the names of the workflows are a leaf that every layer imports, down to the recording of work (models/record) below package workflows: it imports nothing of the suite",
	},
	{
		dir:    "models",
		except: []string{"models/views", "models/record"},
		forbidden: []string{module + "/api", module + "/worker", module + "/workflows", module + "/activities",
			module + "/models/views", module + "/models/record"},
		why: "models is the bottom layer that every other one shares; models/views and models/record, though below it by path, are layers above it: the API's response shapes, and the recording of the work a change sets off, both built on models",
	},
	{
		dir:       "models/record",
		forbidden: []string{module + "/api", module + "/worker", module + "/workflows", module + "/activities", module + "/models/views"},
		allow:     []string{module + "/workflows/names"},
		why:       "the recording of work sits above models and below the API and activities, which both record through it; it names the workflows it wakes through the leaf workflows/names, and records events as their callers built them (models/views is theirs)",
	},
	{
		dir:       "models/views",
		forbidden: []string{module + "/api", module + "/worker", module + "/workflows", module + "/activities", "gorm.io"},
		allow:     []string{module + "/workflows/names"},
		why:       "the views are the objects as the API shows them, built from models by the API and activities alike; they read nothing themselves, the caller reads the rows through models (the workflow IDs they show come from the leaf workflows/names)",
	},
	{
		dir: "internal",
		forbidden: []string{module + "/api", module + "/worker", module + "/workflows", module + "/activities",
			module + "/models"},
		why: "internal holds platform code that several layers import, models among them through internal/database, so it may depend on none of them",
	},
	{
		dir:       "internal",
		except:    []string{"internal/database", "internal/ready"},
		forbidden: []string{"gorm.io"},
		why:       "platform code knows no tables; only internal/database, the connection with its pool and fast paths, and internal/ready, which asks the database to answer, hold a *gorm.DB",
	},
}

func TestImportsFlowOneWay(t *testing.T) {
	root := moduleRoot(t)
	checked := make([]int, len(rules)) // production files each rule saw
	var violations []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// What the go command ignores too, and nested modules.
			name := d.Name()
			if rel != "." && (name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		var applies []int
		for i, r := range rules {
			if under(dir, r.dir) && !slices.ContainsFunc(r.except, func(e string) bool { return under(dir, e) }) {
				applies = append(applies, i)
			}
		}
		if len(applies) == 0 {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, i := range applies {
			checked[i]++
			r := rules[i]
			for _, spec := range f.Imports {
				imp, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					return fmt.Errorf("%s: import %s: %w", rel, spec.Path.Value, err)
				}
				for _, bad := range r.forbidden {
					if under(imp, bad) && !slices.ContainsFunc(r.allow, func(ok string) bool { return under(imp, ok) }) {
						violations = append(violations, fmt.Sprintf("%s:%d imports %s: %s/ must not import %s (%s)",
							rel, fset.Position(spec.Pos()).Line, imp, r.dir, bad, r.why))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rules {
		if checked[i] == 0 {
			t.Errorf("rule for %s checked no file: the directory moved or the walk is wrong", r.dirs())
		}
		t.Logf("%s: %d production files checked", r.dirs(), checked[i])
	}
	for _, v := range violations {
		t.Error(v)
	}
}

// dirs names what r covers: "internal/ but internal/database/, internal/ready/".
func (r rule) dirs() string {
	if len(r.except) == 0 {
		return r.dir + "/"
	}
	return r.dir + "/ but " + strings.Join(r.except, "/, ") + "/"
}

// under tells whether path is prefix or lies below it, by whole elements:
// "gorm.io/gorm" is under "gorm.io", "net/http/httptest" under "net/http",
// but "models2" is not under "models".
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// moduleRoot walks up from the test's working directory to go.mod and
// checks that it declares the module the rules name.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			s := bufio.NewScanner(f)
			for s.Scan() {
				if name, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
					if name = strings.Trim(strings.TrimSpace(name), `"`); name != module {
						t.Fatalf("%s/go.mod declares module %s, the rules name %s", dir, name, module)
					}
					return dir
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
