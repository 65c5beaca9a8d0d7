package pkgdoc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestPackageMap checks ARCHITECTURE.md's package map against the module:
// every package is in it once and nothing else is, and each package
// imports only packages of its own layer or of layers above it.
func TestPackageMap(t *testing.T) {
	root := filepath.Join("..", "..")
	layers := readLayers(t, filepath.Join(root, "ARCHITECTURE.md"))
	pkgs := listPackages(t, root)
	var missing []string
	for p := range pkgs {
		if _, ok := layers[p]; !ok {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("packages missing from ARCHITECTURE.md's package map: %s", strings.Join(missing, ", "))
	}
	for p := range layers {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("ARCHITECTURE.md's package map names %s, which is not a package of the module", p)
		}
	}
	for p, imports := range pkgs {
		for _, imp := range imports {
			if li, ok := layers[imp]; ok && li > layers[p] {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go to the same layer or above", p, layers[p], imp, li)
			}
		}
	}
}

// readLayers reads the table under "## Package map": each row's layer
// number and the packages it names in backquotes.
func readLayers(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(b, []byte("\n## Package map\n"))
	if !ok {
		t.Fatalf("%s has no \"## Package map\" section", path)
	}
	row := regexp.MustCompile("^\\| ([0-9]+) [^|]*\\| (.*) \\|$")
	name := regexp.MustCompile("`([^`]+)`")
	layers := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(after))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			break
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		for _, p := range name.FindAllStringSubmatch(m[2], -1) {
			if l, dup := layers[p[1]]; dup {
				t.Errorf("the package map names %s twice (layers %d and %d)", p[1], l, n)
			}
			layers[p[1]] = n
		}
	}
	if len(layers) < 10 {
		t.Fatalf("the package map in %s names only %d packages", path, len(layers))
	}
	return layers
}

// listPackages returns the module's packages, relative to the module
// root, with the module's packages each imports. Tests may import more
// (a backend's tests run the loop on it), so only what a package's own
// files import counts.
func listPackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := func(ip string) (string, bool) {
			if ip == p.Module.Path {
				return ".", true
			}
			r, ok := strings.CutPrefix(ip, p.Module.Path+"/")
			return r, ok
		}
		self, _ := rel(p.ImportPath)
		var imports []string
		for _, ip := range p.Imports {
			if r, ok := rel(ip); ok {
				imports = append(imports, r)
			}
		}
		pkgs[self] = imports
	}
	return pkgs
}
