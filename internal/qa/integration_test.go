package qa

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/internal/qa/qatest"
	"github.com/spotter-harness/spotter/internal/replay"
)

func integration(t *testing.T) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
}

// TestExampleSuite runs examples/qa on the demo app: every test passes,
// and report.html shows the screenshots, the animated replay and the region
// captures from files that exist.
func TestExampleSuite(t *testing.T) {
	integration(t)
	files, err := Find([]string{"../../examples/qa"})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var progress strings.Builder
	s, err := Run(t.Context(), files, Options{Out: out, Progress: &progress})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if !s.OK() || s.Passed != len(files) {
		t.Errorf("suite: %d passed, %d failed, want all %d to pass\n%s", s.Passed, s.Failed, len(files), progress.String())
	}
	for _, want := range []string{"=== RUN   checkin", "--- PASS: checkin", "check ok   text \"Welcome aboard, Ada Lovelace!\" is visible"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress does not contain %q:\n%s", want, progress.String())
		}
	}
	html := checkReport(t, out)
	if n := strings.Count(html, `alt="screenshot f`); n < 2*len(files) {
		t.Errorf("report shows %d screenshots, want at least two per test", n)
	}
	for _, want := range []string{"replay.gif", "checks/passenger.png", "PASS"} {
		if !strings.Contains(html, want) {
			t.Errorf("report does not mention %s", want)
		}
	}
	junit, err := os.ReadFile(filepath.Join(out, JUnitFile))
	if err != nil || !strings.Contains(string(junit), `<testcase name="checkin"`) || strings.Contains(string(junit), "<failure") {
		t.Errorf("junit.xml = %s (err %v), want passing test cases", junit, err)
	}
}

var srcAttr = regexp.MustCompile(`(?:src|href)="([^"#]+)"`)

// checkReport reads out/report.html and fails the test for any image or
// link in it whose file does not exist.
func checkReport(t *testing.T, out string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	refs := srcAttr.FindAllStringSubmatch(string(b), -1)
	if len(refs) == 0 {
		t.Fatalf("report.html refers to no files")
	}
	for _, m := range refs {
		fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(m[1])))
		if err != nil || fi.Size() == 0 {
			t.Errorf("report.html refers to %s: %v", m[1], err)
		}
	}
	return string(b)
}

// changingPage serves a page with a button; after the switch flips, the
// same page has a different heading and a red banner.
func changingPage(changed *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heading, banner := "Orders", ""
		if changed.Load() {
			heading = "Orders (new layout)"
			banner = `<div style="background:#c62828;color:#fff;height:120px;font-size:40px">Sale! Everything must go</div>`
		}
		fmt.Fprintf(w, `<!doctype html><html><body style="margin:0;font:20px sans-serif">
%s<h1>%s</h1>
<button id="b" style="position:absolute;left:100px;top:300px;width:200px;height:60px"
  onclick="document.getElementById('out').textContent='Order placed'">Place order</button>
<p id="out" style="position:absolute;left:100px;top:400px"></p></body></html>`, banner, heading)
	})
}

// TestReplayDetectsChangedPage records a passing run, replays it on the
// same page (it passes without a model), then on a changed page: the replay
// fails at the first step, and the report shows the side-by-side diff.
func TestReplayDetectsChangedPage(t *testing.T) {
	integration(t)
	var changed atomic.Bool
	ts := httptest.NewServer(changingPage(&changed))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	file := qatest.Write(t, dir, qatest.File{Name: "order", Task: "Place the order.", URL: ts.URL + "/", Allow: "click",
		Actions: "{type: click, x: 200, y: 330}", Checks: []string{"text: Order placed"}})

	rec, err := Run(t.Context(), []string{file}, Options{Out: filepath.Join(dir, "record"), Record: true})
	if err != nil || !rec.OK() {
		t.Fatalf("recording run: %+v, %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "replays", "order", "replay.json")); err != nil {
		t.Fatalf("no recording written: %v", err)
	}

	same, err := Run(t.Context(), []string{file}, Options{Out: filepath.Join(dir, "same"), Replay: true})
	if err != nil || !same.OK() {
		t.Fatalf("replay on the same page: %+v, %v", same.Tests, err)
	}

	changed.Store(true)
	out := filepath.Join(dir, "changed")
	s, err := Run(t.Context(), []string{file}, Options{Out: out, Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.OK() {
		t.Fatalf("replay on a changed page passed, want it to fail")
	}
	r := s.Tests[0]
	if r.Replay == nil || len(r.Replay.Divergences) == 0 || r.Replay.Divergences[0].Step != 1 || r.Replay.Divergences[0].Diff == "" {
		t.Fatalf("replay result = %+v, want a divergence at step 1 with a diff image", r.Replay)
	}
	if !strings.Contains(r.Failure, "diverged") {
		t.Errorf("failure = %q, want it to say the replay diverged", r.Failure)
	}
	html := checkReport(t, out)
	if !strings.Contains(html, `src="`+r.Replay.Divergences[0].Diff+`"`) {
		t.Errorf("report.html does not show the diff image %s", r.Replay.Divergences[0].Diff)
	}
	if !strings.Contains(html, "<span>recorded</span><span>actual</span><span>difference</span>") {
		t.Errorf("report.html does not caption the replay's diff")
	}
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(r.Replay.Divergences[0].Diff)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := replay.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	checkCaptions(t, img, replayCaptions)
}

// TestCassetteReplay runs the demo task on the recorded Claude cassette
// through the real Anthropic adapter: as recorded it passes, with a DOM
// check; with one interaction more than the run asks for, the test fails
// and says the cassette was not played to the end.
func TestCassetteReplay(t *testing.T) {
	integration(t)
	c, err := cassette.Load("../../examples/cassettes/demo-anthropic.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full, longer := filepath.Join(dir, "full.json"), filepath.Join(dir, "longer.json")
	if err := c.Write(full); err != nil {
		t.Fatal(err)
	}
	c.Interactions = append(c.Interactions, c.Interactions[len(c.Interactions)-1])
	if err := c.Write(longer); err != nil {
		t.Fatal(err)
	}
	test := func(name, cas string) string {
		file := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf(`name: %s
task: >-
  Check in the passenger Ada Lovelace, open the command palette with Ctrl+Shift+K,
  reserve seat 30 from the seat list, and drag the ticket into the tray.
start_url: "demo:/"
display: {width: 1280, height: 800, dpr: 1}
policy:
  allow: [click, double_click, type, keypress, scroll, drag, move, wait]
  max_batch: 8
  hosts: [demo]
max_steps: 12
model: {provider: anthropic, name: claude-sonnet-4-5, cassette: %s}
checks:
  - text: "Welcome aboard, Ada Lovelace!"
`, name, cas)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	s, err := Run(t.Context(), []string{test("recorded", full), test("longer", longer)},
		Options{Out: filepath.Join(dir, "out"), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if r := s.Tests[0]; !r.OK {
		t.Errorf("test on the cassette as recorded failed: %s", r.Failure)
	}
	if r := s.Tests[1]; r.OK || !strings.Contains(r.Failure, "cassette") || !strings.Contains(r.Failure, "not played") {
		t.Errorf("test on a cassette with an extra interaction: ok %v, failure %q; want it to fail naming the unplayed interaction", r.OK, r.Failure)
	}
}
