package qa

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spotter-harness/spotter/internal/qa/qatest"
)

// orderPage serves a page whose "Place order" button moves down 39 px when
// the banner is on; ?cover=1 lays a transparent sheet over the button.
func orderPage(banner *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		top, bar := 300, ""
		if banner.Load() {
			top, bar = 339, `<div style="height:39px;background:#c62828;color:#fff">Free shipping this week</div>`
		}
		cover := ""
		if r.URL.Query().Get("cover") == "1" {
			cover = `<div id="sheet" style="position:absolute;left:0;top:0;width:800px;height:600px"></div>`
		}
		fmt.Fprintf(w, `<!doctype html><html><body style="margin:0;font:20px sans-serif">%s<h1>Orders</h1>
<button id="b" style="position:absolute;left:100px;top:%dpx;width:200px;height:30px"
  onclick="document.getElementById('out').textContent='Order placed'">Place order</button>
<p id="out" style="position:absolute;left:100px;top:420px"></p>%s</body></html>`, bar, top, cover)
	})
}

// TestTargetSurvivesABanner runs one test that clicks "Place order" by its
// role and name and one that clicks its coordinates, on the page as
// recorded and with a banner that moves the button 39 px down: the
// targeted test passes both times, the coordinates miss the moved button.
// A target that matches two elements, one under another element and a
// targeted click the policy forbids fail with their reasons: the click goes
// through the loop's checks like any action.
func TestTargetSurvivesABanner(t *testing.T) {
	integration(t)
	var banner atomic.Bool
	ts := httptest.NewServer(orderPage(&banner))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	write := func(name, path, allow, actions string) string {
		return qatest.Write(t, dir, qatest.File{Name: name, Task: "Place the order.", URL: ts.URL + path, Allow: allow,
			Actions: actions, Checks: []string{"text: Order placed"}})
	}
	byTarget := write("by-target", "/", "click", `{type: click, target: {role: button, name: Place order}}`)
	byText := write("by-text", "/", "click", `{type: click, target: place ORDER}`)
	byXY := write("by-xy", "/", "click", `{type: click, x: 200, y: 315}`)
	ambiguous := write("ambiguous", "/", "click", `{type: click, target: order}`)
	covered := write("covered", "/?cover=1", "click", `{type: click, target: Place order}`)
	refused := write("refused", "/", "type", `{type: click, target: Place order}`)

	run := func(out string, files ...string) map[string]TestResult {
		var progress strings.Builder
		s, err := Run(t.Context(), files, Options{Out: filepath.Join(dir, out), Progress: &progress})
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		t.Logf("%s:\n%s", out, progress.String())
		got := map[string]TestResult{}
		for _, r := range s.Tests {
			got[r.Name] = r
		}
		return got
	}
	before := run("before", byTarget, byText, byXY)
	for _, name := range []string{"by-target", "by-text", "by-xy"} {
		if !before[name].OK {
			t.Errorf("%s on the page as it was: %s", name, before[name].Failure)
		}
	}

	banner.Store(true)
	after := run("after", byTarget, byText, byXY, ambiguous, covered, refused)
	for _, name := range []string{"by-target", "by-text"} {
		if !after[name].OK {
			t.Errorf("%s with the banner failed, want it to find the moved button: %s", name, after[name].Failure)
		}
	}
	want := map[string]string{
		"by-xy":     "Order placed",                                               // the click missed: the check fails
		"ambiguous": `2 elements match (<h1> "Orders", <button#b> "Place order")`, // no guess between two
		"covered":   `<button#b> "Place order" is covered by <div#sheet>`,
		"refused":   "not allowed", // the policy applies to a targeted click
	}
	for name, w := range want {
		r := after[name]
		if r.OK || !strings.Contains(r.Failure, w) {
			t.Errorf("%s: ok %v, failure %q; want a failure containing %q", name, r.OK, r.Failure, w)
		}
	}
	// The trace records the resolved point with the target.
	b, err := os.ReadFile(filepath.Join(dir, "after", "by-target", "events.jsonl"))
	if err != nil || !strings.Contains(string(b), `"target":{"name":"Place order","role":"button"}`) || !strings.Contains(string(b), `"y":354`) {
		t.Errorf("by-target's trace (%v) does not record the target with the point it resolved to (y 354):\n%s", err, b)
	}
}
