package panel_test

import (
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/spotter-harness/spotter/web/panel"
)

// parseIndex parses index.html from panel.FS.
func parseIndex(t *testing.T) *html.Node {
	t.Helper()
	b, err := fs.ReadFile(panel.FS, "index.html")
	if err != nil {
		t.Fatalf("ReadFile(index.html) = %v", err)
	}
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse index.html: %v", err)
	}
	return doc
}

// walk calls f for every element of n, template contents included.
func walk(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

// TestAssetsExist checks that every local asset index.html refers to is in
// FS, and that nothing is loaded from another origin.
func TestAssetsExist(t *testing.T) {
	doc := parseIndex(t)
	var refs []string
	walk(doc, func(n *html.Node) {
		for _, name := range []string{"src", "href"} {
			v, ok := attr(n, name)
			if !ok || v == "" || strings.HasPrefix(v, "#") {
				continue
			}
			if n.Data == "form" || (n.Data == "a" && strings.HasPrefix(v, "#")) {
				continue
			}
			refs = append(refs, v)
		}
	})
	if len(refs) < 3 {
		t.Fatalf("index.html refers to %d assets %q, want at least app.js, style.css and the icon", len(refs), refs)
	}
	for _, ref := range refs {
		u, err := url.Parse(ref)
		if err != nil {
			t.Errorf("asset %q: %v", ref, err)
			continue
		}
		if u.Scheme != "" || u.Host != "" {
			t.Errorf("asset %q is loaded from elsewhere, want a file of panel.FS", ref)
			continue
		}
		name := strings.TrimPrefix(u.Path, "/")
		if _, err := fs.Stat(panel.FS, name); err != nil {
			t.Errorf("asset %q: %v", ref, err)
		}
	}
	for _, want := range []string{"app.js", "style.css"} {
		if !slices.Contains(refs, want) {
			t.Errorf("index.html does not load %s", want)
		}
	}
}

// TestEveryFileIsUsed checks that FS holds nothing index.html does not use.
func TestEveryFileIsUsed(t *testing.T) {
	b, err := fs.ReadFile(panel.FS, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(panel.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "index.html" {
			return err
		}
		if !strings.Contains(string(b), `"`+p+`"`) {
			t.Errorf("%s is in panel.FS but index.html does not refer to it", p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("WalkDir: %v", err)
	}
}

// TestScriptFindsItsElements checks that every id and template class the
// script looks up exists in index.html, so a renamed element cannot leave
// a dead button behind.
func TestScriptFindsItsElements(t *testing.T) {
	doc := parseIndex(t)
	ids := map[string]bool{}
	classes := map[string]bool{}
	walk(doc, func(n *html.Node) {
		if v, ok := attr(n, "id"); ok {
			ids[v] = true
		}
		if v, ok := attr(n, "class"); ok {
			for _, c := range strings.Fields(v) {
				classes[c] = true
			}
		}
	})
	js, err := fs.ReadFile(panel.FS, "app.js")
	if err != nil {
		t.Fatal(err)
	}
	idRef := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)`)
	found := idRef.FindAllStringSubmatch(string(js), -1)
	if len(found) < 10 {
		t.Fatalf("found %d element lookups in app.js, want many", len(found))
	}
	for _, m := range found {
		if !ids[m[1]] {
			t.Errorf("app.js looks up #%s, which index.html does not have", m[1])
		}
	}
	classRef := regexp.MustCompile(`q\('\.([A-Za-z0-9_-]+)'\)`)
	for _, m := range classRef.FindAllStringSubmatch(string(js), -1) {
		if !classes[m[1]] {
			t.Errorf("app.js looks up .%s in a card, which the template does not have", m[1])
		}
	}
}

// TestNoHTMLFromData checks that the script never parses strings as HTML:
// everything it shows from pages and models goes in as text.
func TestNoHTMLFromData(t *testing.T) {
	js, err := fs.ReadFile(panel.FS, "app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment", "DOMParser"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s, want text-only DOM updates", bad)
		}
	}
	doc := parseIndex(t)
	walk(doc, func(n *html.Node) {
		if n.Data == "script" {
			if src, _ := attr(n, "src"); src == "" {
				t.Errorf("index.html has an inline script; the CSP allows only files")
			}
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s=...>: inline handlers are refused by the CSP", n.Data, a.Key)
			}
		}
	})
}
