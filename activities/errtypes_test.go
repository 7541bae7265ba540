package activities_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Error types are named constants (errtypes.go), never string literals,
// wherever they are produced (temporal.New…ApplicationError), listed
// (NonRetryableErrorTypes) or checked (ApplicationError.Type() == …): a
// misspelt literal in a retry policy silently retries a permanent failure.
func TestErrorTypesAreNamedConstants(t *testing.T) {
	fset := token.NewFileSet()
	var files []string
	for _, dir := range []string{".", "ai", "../workflows"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	literal := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.STRING
	}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr: // temporal.New[NonRetryable]ApplicationError(message, type, …)
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && strings.HasSuffix(sel.Sel.Name, "ApplicationError") &&
					len(n.Args) >= 2 && literal(n.Args[1]) {
					t.Errorf("%s: error type %s written as a literal", fset.Position(n.Pos()), n.Args[1].(*ast.BasicLit).Value)
				}
			case *ast.KeyValueExpr: // NonRetryableErrorTypes: []string{…}
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "NonRetryableErrorTypes" {
					if list, ok := n.Value.(*ast.CompositeLit); ok {
						for _, e := range list.Elts {
							if literal(e) {
								t.Errorf("%s: non-retryable error type %s written as a literal", fset.Position(e.Pos()), e.(*ast.BasicLit).Value)
							}
						}
					}
				}
			case *ast.BinaryExpr: // appErr.Type() == …
				if call, ok := n.X.(*ast.CallExpr); ok && (n.Op == token.EQL || n.Op == token.NEQ) && literal(n.Y) {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Type" {
						t.Errorf("%s: error type compared with the literal %s", fset.Position(n.Pos()), n.Y.(*ast.BasicLit).Value)
					}
				}
			}
			return true
		})
	}
}
