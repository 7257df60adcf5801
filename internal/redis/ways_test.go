package redis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreMethodsDoNotAskTheLayout holds the Store to ways.go's rule: waysOf alone looks at a concert's
// layout; every other method of the Store calls the line and seats it built, never the layout's shard
// count or seat slots, nor the reads that return them.
func TestStoreMethodsDoNotAskTheLayout(t *testing.T) {
	allowed := map[string]bool{"ways": true, "waysOf": true, "LineShards": true}
	asking := map[string]bool{"Shards": true, "Schedules": true, "layout": true, "LineShards": true}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil || allowed[fn.Name.Name] || !onStore(fn) {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && asking[sel.Sel.Name] {
					found = append(found, fset.Position(sel.Pos()).String()+": Store."+fn.Name.Name+" reads "+sel.Sel.Name)
				}
				return true
			})
		}
	}
	require.Empty(t, found, "a method of the Store asks the concert's layout instead of calling its ways (ways.go)")
}

// onStore reports whether fn is a method of *Store.
func onStore(fn *ast.FuncDecl) bool {
	star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Store"
}
