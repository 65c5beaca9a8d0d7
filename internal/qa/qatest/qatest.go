// Package qatest writes test files and serves pages for the tests of
// `spotter test` and of the other commands' surroundings (sandboxes,
// egress allowlists, approvals), in package qa and in cmd/spotter.
package qatest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A Site is a shop page on one server that shows a picture from another
// (off any allowlist that names only the shop) and says whether it
// loaded, a password field (at 200,215 on an 800x600 page), and a "Buy
// now" button (at 200,320), which the built-in approval rules flag as a
// purchase: clicking it shows "Bought" in place of "Not bought" and
// posts to the shop.
type Site struct {
	URL       string        // the shop's page
	Pictures  *atomic.Int64 // requests the other server got
	Purchases *atomic.Int64 // purchases the shop got
}

// ShopSite serves a Site until t ends.
func ShopSite(t testing.TB) Site {
	t.Helper()
	site := Site{Pictures: new(atomic.Int64), Purchases: new(atomic.Int64)}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.Pictures.Add(1)
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/buy" {
			site.Purchases.Add(1)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html><body style="margin:0;font:20px sans-serif"><h1>Shop</h1>
<p id="net">picture pending</p>
<img src="%s/pic.svg" onload="net.textContent='picture loaded'" onerror="net.textContent='picture blocked'">
<input id="pw" type="password" aria-label="Card PIN" style="position:absolute;left:100px;top:200px;width:200px;height:30px">
<button id="buy" style="position:absolute;left:100px;top:300px;width:200px;height:40px"
  onclick="out.textContent='Bought'; fetch('/buy', {method: 'POST'})">Buy now</button>
<p id="out" style="position:absolute;left:100px;top:400px">Not bought</p></body></html>`, other.URL)
	}))
	t.Cleanup(srv.Close)
	site.URL = srv.URL + "/"
	return site
}

// Shop serves ShopSite and writes into dir a test file, shop.yaml, whose
// script clicks "Buy now" and whose checks pass only if the picture was
// refused and nothing was bought. It returns the file's path and the
// count of the other server's requests.
func Shop(t testing.TB, dir string) (file string, pictures *atomic.Int64) {
	t.Helper()
	site := ShopSite(t)
	file = Write(t, dir, File{Name: "shop", Task: "Buy the item.", URL: site.URL, Allow: "click",
		Actions: "{type: click, target: Buy now}", Checks: []string{"text: picture blocked", "text: Not bought"}})
	return file, site.Pictures
}

// File is a one-page test file: a model's one turn of actions, then
// "done", on an 800x600 browser at URL, whose host is the policy's only
// one.
type File struct {
	Name, Task string
	URL        string // the start URL
	Allow      string // the policy's allowed kinds, a YAML list's items
	Actions    string // the turn's actions, a YAML list's items
	Checks     []string
}

// Write writes f into dir as NAME.yaml and returns its path.
func Write(t testing.TB, dir string, f File) string {
	t.Helper()
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`name: %s
task: %s
start_url: %s
display: {width: 800, height: 600}
policy: {allow: [%s], hosts: [%q]}
model:
  turns:
    - actions: [%s]
    - say: done
checks:
`, f.Name, f.Task, f.URL, f.Allow, u.Host, f.Actions)
	for _, c := range f.Checks {
		body += "  - " + c + "\n"
	}
	file := filepath.Join(dir, f.Name+".yaml")
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// Denied is what a shop test's failure says when its click was refused.
const Denied = `denied: clicking the button "Buy now" may spend money (rule purchase)`
