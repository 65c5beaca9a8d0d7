// Package pkgdoc checks the module's documentation rules: every package has
// a package comment that starts "Package <name>" (or "Command <name>" for
// main packages).
package pkgdoc

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEveryPackageHasADocComment(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "runs" || name == "bin"):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 5 {
		t.Fatalf("found only %d package directories under %s", len(dirs), root)
	}
	for dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Errorf("parse %s: %v", dir, err)
			continue
		}
		for name, p := range pkgs {
			var doc string
			for _, f := range p.Files {
				if f.Doc != nil {
					doc = f.Doc.Text()
					break
				}
			}
			want := "Package " + name
			if name == "main" {
				want = "Command "
			}
			if !strings.HasPrefix(doc, want) {
				t.Errorf("package %s in %s: doc comment %q, want one starting %q", name, dir, firstLine(doc), want)
			}
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
