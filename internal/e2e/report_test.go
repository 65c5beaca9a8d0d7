package e2e

// The report of a real run as a trace viewer, in the operator's real
// Chromium: a scripted model signs in on a careless page (it logs the
// password, sends it in URLs, fails a request, throws) and then tries a
// host the policy refuses. The report's console and network tabs show what
// the page did, a screenshot opens full size and zooms, the filter keeps
// the refused step, and the password is nowhere: not in the file, not in
// any tab.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen/cdp"
)

func TestReportConsoleNetworkZoomFilter(t *testing.T) {
	integration(t)
	const pass = "Tr4ce pa$$/w0rd&x=1"
	lg := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	d, err := cdp.Open(ctx, cdp.Config{Logger: lg})
	cancel()
	if err != nil {
		t.Fatalf("cdp.Open() = %v", err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	got := make(chan string, 4)
	srv := serve(t, map[string]http.HandlerFunc{
		"GET /welcome": func(w http.ResponseWriter, r *http.Request) {
			got <- r.URL.Query().Get("pass")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(`<!doctype html><title>Welcome</title><h1>Welcome back</h1><script>console.warn("welcome, " + new URLSearchParams(location.search).get("user"))</script>`))
		},
	})
	navigate(t, d, srv.URL+"/account.html")
	typed, _ := json.Marshal(pass)
	m := script.New([]script.Turn{
		{Say: "The user name.", Actions: script.Batch(`[{"type":"click","x":190,"y":148},{"type":"type","text":"ada"}]`)},
		{Say: "The password.", Actions: script.Batch(`[{"type":"click","x":190,"y":238},{"type":"type","text":` + string(typed) + `}]`)},
		{Say: "Sign in.", Actions: script.Batch(`[{"type":"keypress","keys":["ENTER"]}]`)},
		{Say: "And a look elsewhere.", Actions: script.Batch(`[{"type":"navigate","url":"https://elsewhere.example/"}]`), ExpectError: "not allowed"},
		{Say: "Signed in; elsewhere is off limits."},
	}, true)
	policy := actions.Standard()
	policy.Hosts = []string{strings.TrimPrefix(srv.URL, "http://")}
	dir := filepath.Join(t.TempDir(), "run")
	tw, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Task: "Sign in as ada.", Policy: policy,
		Inspector: d, Trace: tw, Logger: lg, ModelName: "script"})
	if cerr := tw.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil || out.Stop != harness.StopEndTurn {
		t.Fatalf("Run() = %+v, %v", out, err)
	}
	select {
	case p := <-got:
		if p != pass {
			t.Fatalf("the page's server got the password %q, want %q", p, pass)
		}
	default:
		t.Fatal("the sign-in never reached the page's server")
	}
	report, err := trace.WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	leaks := []string{pass, url.QueryEscape(pass), url.PathEscape(pass), strings.ReplaceAll(url.QueryEscape(pass), "+", "%20")}
	for _, l := range leaks {
		if strings.Contains(string(html), l) {
			t.Errorf("report.html holds the password as %q", l)
		}
	}

	v := openViewer(t)
	v.do("open the report", chromedp.Navigate("file://"+report),
		chromedp.Poll[chromedp.Void](`document.body.classList.contains('viewer')`))
	if y := v.eval(`scrollY`); y != "0" {
		t.Errorf("the report opens scrolled to %s px, want its summary at the top", y)
	}
	v.snap("trace-1-summary")

	// Step 3 (Enter): the page's console and network.
	v.do("go to step 3", chromedp.Click(`ol.timeline li:nth-child(3) a`), chromedp.Poll[chromedp.Void](`location.hash === '#step-3'`))
	v.do("open its console tab", chromedp.Click(`#step-3 [data-tab="console"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#step-3 [data-panel="console"]').checkVisibility()`))
	v.snap("trace-2-console")
	console := v.rows("#step-3 table.log.console")
	for _, want := range []string{"log|signing in with [", "error|Uncaught Error: profile failed for [", "error|could not load the profile",
		"error|Failed to load resource: the server responded with a status of 404", "warning|welcome, ada"} {
		if !containsPrefix(console, want) {
			t.Errorf("step 3's console %q has no %q", console, want)
		}
	}
	if tab := v.eval(`document.querySelector('#step-3 [data-tab="console"]').textContent.replace(/\s+/g, ' ').trim()`); !strings.Contains(tab, "errors") {
		t.Errorf("console tab says %q, want its errors counted", tab)
	}
	if v.eval(`String(document.querySelector('#step-3 [data-panel="actions"]').checkVisibility())`) != "false" {
		t.Errorf("the actions tab still shows beside the console")
	}
	v.do("open its network tab", chromedp.Click(`#step-3 [data-tab="network"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#step-3 [data-panel="network"]').checkVisibility()`))
	v.snap("trace-3-network")
	network := v.rows("#step-3 table.log.network")
	for _, want := range []string{"GET|" + srv.URL + "/api/profile?token=", "GET|" + srv.URL + "/welcome?user=ada&pass="} {
		if !containsPrefix(network, want) {
			t.Errorf("step 3's network %q has no %q", network, want)
		}
	}
	for _, r := range network {
		if strings.Contains(r, "/api/profile") && !strings.Contains(r, "|404") {
			t.Errorf("request %q, want its 404", r)
		}
	}

	// A screenshot at full size, zoomed.
	v.do("back to the actions", chromedp.Click(`#step-3 [data-tab="actions"]`))
	w := v.eval(`document.querySelector('#step-3 svg.shot').dataset.w`)
	v.do("open a screenshot", chromedp.Click(`#step-3 svg.shot`),
		chromedp.Poll[chromedp.Void](`!document.getElementById('lightbox').hidden`))
	if z, shown := v.eval(`document.querySelector('#lightbox .lb-zoom').textContent`), v.eval(`String(Math.round(document.querySelector('#lightbox svg.shot').getBoundingClientRect().width))`); z != "100%" || shown != w {
		t.Errorf("the screenshot opens at %s, %s px wide; want 100%%, its own %s px", z, shown, w)
	}
	v.do("zoom in", chromedp.KeyEvent("+"), chromedp.Poll[chromedp.Void](`document.querySelector('#lightbox .lb-zoom').textContent === '125%'`))
	v.snap("trace-4-zoom")
	if shown := v.eval(`String(Math.round(document.querySelector('#lightbox svg.shot').getBoundingClientRect().width))`); shown != fmt.Sprint(int(1.25*atof(w)+0.5)) {
		t.Errorf("zoomed to 125%%, the screenshot is %s px wide, want %.0f", shown, 1.25*atof(w))
	}
	v.do("close it", chromedp.KeyEvent("\x1b"), chromedp.Poll[chromedp.Void](`document.getElementById('lightbox').hidden`))

	// The filter keeps the refused step only.
	v.do("keep the failed steps", chromedp.KeyEvent("f"), chromedp.Poll[chromedp.Void](`location.hash === '#step-4'`))
	v.snap("trace-5-failed-only")
	if s := v.state(); s.Current != "#step-4" {
		t.Errorf("with the filter, the viewer shows %q, want the refused step 4", s.Current)
	}
	if n := v.eval(`String([...document.querySelectorAll('ol.timeline li')].filter(li => li.checkVisibility()).length)`); n != "1" {
		t.Errorf("with the filter, %s steps show in the timeline, want the 1 refused", n)
	}
	v.do("step on", chromedp.KeyEvent("j"))
	if s := v.state(); s.Current != "#step-4" {
		t.Errorf("stepping on under the filter went to %q, want to stay on the only failed step", s.Current)
	}
	v.do("show every step again", chromedp.KeyEvent("f"))

	// No tab of any step shows the password.
	text := v.eval(`(() => {
		let all = '';
		for (const s of document.querySelectorAll('section.step')) {
			for (const b of s.querySelectorAll('[data-tab]')) { b.click(); all += s.innerText + '\n'; }
		}
		document.body.classList.add('all');
		return all + document.body.innerText;
	})()`)
	for _, l := range leaks {
		if strings.Contains(text, l) {
			t.Errorf("a tab of the report shows the password as %q", l)
		}
	}
	if !strings.Contains(text, "signing in with [") {
		t.Errorf("the tabs' text lacks the masked console message: the check read nothing")
	}
	v.checkLoadedNothing(report)
}

// rows returns the rows of the table sel as "level|text" (console) or
// "method|URL|status" (network) cells, joined by |.
func (v *viewer) rows(sel string) []string {
	v.t.Helper()
	c, cancel := context.WithTimeout(v.tab, 10*time.Second)
	defer cancel()
	rows, err := chromedp.Run(c, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q + ' tbody tr')].map(tr =>
		[...tr.querySelectorAll('td')].slice(1).map(td => td.innerText.replace(/\s+/g, ' ').trim()).join('|'))`, sel)))
	if err != nil {
		v.t.Fatal(err)
	}
	return rows
}

// eval evaluates expr in the viewer's tab, as a string.
func (v *viewer) eval(expr string) string {
	v.t.Helper()
	c, cancel := context.WithTimeout(v.tab, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Evaluate[any](expr))
	if err != nil {
		v.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return fmt.Sprint(s)
}

func containsPrefix(rows []string, prefix string) bool {
	for _, r := range rows {
		if strings.HasPrefix(r, prefix) {
			return true
		}
	}
	return false
}

func atof(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}
