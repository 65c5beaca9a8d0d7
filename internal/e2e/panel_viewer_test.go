package e2e

// The trace viewer of report.html in a real browser: a real run of the
// demo task, its browser in a local sandbox behind the egress proxy, then
// the report opened from file:// in an ordinary headless Chromium (the
// operator's browser of panel_test.go), stepped through with the keyboard,
// the timeline and the buttons. Screenshots of each state go to the test's
// artifact directory (go test -artifacts keeps them; the paths are logged).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
)

// viewerState is what the viewer shows.
type viewerState struct {
	Viewer   bool     // the script ran: body.viewer
	All      bool     // every step shows
	Visible  []string // ids of the step sections on screen
	Current  string   // the timeline entry marked current
	Hash     string
	Position string // "Step 2 of 8"
	Entries  int    // timeline entries
	Thumbs   int    // timeline entries with a screenshot
	Words    string // the current step's model words
	Rows     int    // rows of its action tables
	Times    []string
	Shots    int // screenshots in the current step (before and after)
	Marks    int // action markers on them
	Meta     string
}

const viewerStateJS = `(() => {
	const vis = [...document.querySelectorAll('section.step')].filter(s => s.getClientRects().length > 0);
	const cur = document.querySelector('section.step.current') || vis[0];
	const q = (s) => cur ? [...cur.querySelectorAll(s)] : [];
	const tl = document.querySelector('ol.timeline a[aria-current]');
	return {
		Viewer: document.body.classList.contains('viewer'),
		All: document.body.classList.contains('all'),
		Visible: vis.map(s => s.id),
		Current: tl ? tl.getAttribute('href') : '',
		Hash: location.hash,
		Position: (document.getElementById('viewer-pos') || {}).textContent || '',
		Entries: document.querySelectorAll('ol.timeline li').length,
		Thumbs: document.querySelectorAll('ol.timeline svg use').length,
		Words: q('.words').map(e => e.textContent).join(' '),
		Rows: q('table.actions tbody tr').length,
		Times: q('table.actions tbody tr td:nth-child(6)').map(e => e.textContent.trim()),
		Shots: q('svg.shot').length,
		Marks: q('svg.shot g.mk').length,
		Meta: q('h2 .meta').map(e => e.textContent).join(' '),
	};
})()`

// TestReportViewer steps through a real run's report: one step at a time,
// with its model words, action table with timings, and the before and after
// screenshots with the click marked; the arrow keys, j and k, Home and End,
// the timeline and the buttons move between steps; "a" shows them all. The
// page makes no request (it is one self-contained file), and its header
// sums up the egress decisions per host instead of one box each.
func TestReportViewer(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	task, res := runDemoSandboxed(ctx, t)
	decisions := res.Sandbox.Allowed + res.Sandbox.Refused
	steps := res.Outcome.Steps

	v := openViewer(t)
	v.do("open the report", chromedp.Navigate("file://"+res.Report),
		chromedp.Poll[chromedp.Void](`document.body.classList.contains('viewer')`))
	s := v.state()
	v.snap("viewer-1-first-step")
	v.only(s, "step-1")
	checkFirstStep(t, s, task, steps)
	v.checkSteps(steps)
	v.checkEgressSummary(decisions)
	v.checkLoadedNothing(res.Report)
}

// runDemoSandboxed runs examples/demo.yaml with its browser in a local
// sandbox and returns the task and its result, which must be a success
// with several egress decisions.
func runDemoSandboxed(ctx context.Context, t *testing.T) (runner.Task, runner.Result) {
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	sbx, err := wiring.NewSandboxes(ctx, wiring.SandboxConfig{Backend: isolate.Local, Logger: log})
	if err != nil {
		t.Fatalf("local sandboxes: %v", err)
	}
	t.Cleanup(func() { sbx.Close(context.Background()) })
	task, err := runner.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, task, runner.Options{Out: out, Sandboxes: sbx, Logger: log})
	if err != nil || !res.OK {
		t.Fatalf("runner.Run(demo) = %+v, %v", res.Outcome, err)
	}
	if res.Sandbox == nil || res.Sandbox.Allowed < 2 {
		t.Fatalf("the run's sandbox = %+v, want several egress decisions to summarize", res.Sandbox)
	}
	return task, res
}

// viewer is a tab of the operator's browser that records every request
// and every console message, and saves screenshots to the test's artifact
// directory.
type viewer struct {
	t     *testing.T
	tab   context.Context
	shots string // the screenshots' directory

	mu       sync.Mutex
	requests []string // URLs requested, data: URLs shortened
	console  []string // console calls and exceptions
}

// openViewer opens a tab of the operator's browser, closed when the test
// ends.
func openViewer(t *testing.T) *viewer {
	v := &viewer{t: t}
	tab, closeTab := chromedp.NewContext(operatorTab(t), chromedp.WithListener(func(ev any) {
		v.mu.Lock()
		defer v.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if strings.HasPrefix(u, "data:") {
				u = u[:min(len(u), 40)]
			}
			v.requests = append(v.requests, u)
		case *runtime.EventConsoleAPICalled:
			v.console = append(v.console, string(ev.Type))
		case *runtime.EventExceptionThrown:
			v.console = append(v.console, "exception: "+ev.ExceptionDetails.Text)
		}
	}))
	t.Cleanup(closeTab)
	// The tab lives as long as the context of its first run: tab itself.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	v.tab = tab
	v.shots = t.ArtifactDir()
	t.Logf("screenshots of the viewer: %s", v.shots)
	return v
}

// do runs steps in the tab, within 30s; what says what they do.
func (v *viewer) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	v.t.Helper()
	c, cancel := context.WithTimeout(v.tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
}

// state reads what the viewer shows.
func (v *viewer) state() viewerState {
	v.t.Helper()
	c, cancel := context.WithTimeout(v.tab, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Evaluate[viewerState](viewerStateJS))
	if err != nil {
		v.t.Fatalf("read the viewer's state: %v", err)
	}
	return s
}

// snap saves a screenshot of the tab as name.png and logs its path.
func (v *viewer) snap(name string) {
	v.t.Helper()
	c, cancel := context.WithTimeout(v.tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		v.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(v.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		v.t.Fatal(err)
	}
	v.t.Logf("%s: %s", name, p)
}

// press sends a key and waits for the viewer to show step want.
func (v *viewer) press(key, want string) viewerState {
	v.t.Helper()
	v.do("press "+key, chromedp.KeyEvent(key),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.hash === %q`, want)))
	return v.state()
}

// only checks that s shows step id alone, marked in the timeline and the
// location's hash.
func (v *viewer) only(s viewerState, id string) {
	v.t.Helper()
	if len(s.Visible) != 1 || s.Visible[0] != id || s.Current != "#"+id || s.Hash != "#"+id {
		v.t.Errorf("viewer shows %v (timeline marks %q, hash %q), want only %s", s.Visible, s.Current, s.Hash, id)
	}
}

// checkFirstStep checks what the viewer shows on opening a report of
// steps steps of task: a timeline entry with a screenshot per step, and
// step 1's words, actions, timings and screenshots.
func checkFirstStep(t *testing.T, s viewerState, task runner.Task, steps int) {
	if s.Entries != steps || s.Thumbs != steps || s.Position != fmt.Sprintf("Step 1 of %d", steps) {
		t.Errorf("timeline has %d entries (%d with a screenshot), position %q; want %d steps, each with one, and \"Step 1 of %d\"",
			s.Entries, s.Thumbs, s.Position, steps, steps)
	}
	// The first step of examples/demo.yaml: the model's words, three
	// actions (click, type, click) with their times, the screenshot it saw
	// with the two clicks marked, and the one it got back.
	if !strings.Contains(s.Words, task.Model.Turns[0].Say) || s.Rows != 3 || s.Shots != 2 || s.Marks != 2 {
		t.Errorf("step 1 shows words %q, %d action rows, %d screenshots, %d marks; want the model's words, 3 rows, 2 screenshots, 2 marks",
			s.Words, s.Rows, s.Shots, s.Marks)
	}
	for _, tm := range s.Times {
		if !strings.HasSuffix(tm, "s") {
			t.Errorf("action times %q, want a duration for each", s.Times)
			break
		}
	}
	if !strings.Contains(s.Meta, "model ") || !strings.Contains(s.Meta, "step ") {
		t.Errorf("step 1's timings = %q, want the model's time and the step's", s.Meta)
	}
}

// checkSteps moves between the report's steps with the keys (arrows, j
// and k, Home and End), the timeline and the Next button, each showing one
// step, then shows them all with "a" and goes back to one step.
func (v *viewer) checkSteps(steps int) {
	s := v.press(kb.ArrowRight, "#step-2")
	v.only(s, "step-2")
	v.snap("viewer-2-arrow-right")
	v.only(v.press("j", "#step-3"), "step-3")
	v.only(v.press(kb.ArrowLeft, "#step-2"), "step-2")
	s = v.press(kb.End, fmt.Sprintf("#step-%d", steps))
	v.only(s, fmt.Sprintf("step-%d", steps))
	v.snap("viewer-3-last-step")
	v.only(v.press(kb.Home, "#step-1"), "step-1")
	v.do("press k on the first step", chromedp.KeyEvent("k"))
	v.only(v.state(), "step-1") // no step before the first

	v.do("click the third step in the timeline", chromedp.Click(`ol.timeline li:nth-child(3) a`),
		chromedp.Poll[chromedp.Void](`location.hash === '#step-3'`))
	v.only(v.state(), "step-3")
	v.do("click Next", chromedp.Click(`[data-go="next"]`), chromedp.Poll[chromedp.Void](`location.hash === '#step-4'`))
	v.only(v.state(), "step-4")
	v.snap("viewer-4-timeline-and-next")

	v.do("show every step", chromedp.KeyEvent("a"), chromedp.Poll[chromedp.Void](`document.body.classList.contains('all')`))
	if s := v.state(); len(s.Visible) != steps {
		v.t.Errorf("with every step shown, %d sections are on screen, want %d", len(s.Visible), steps)
	}
	v.snap("viewer-5-all-steps")
	v.do("back to one step", chromedp.KeyEvent("a"), chromedp.Poll[chromedp.Void](`!document.body.classList.contains('all')`))
}

// checkEgressSummary checks that the header sums the run's decisions
// egress decisions up per host, with their list folded and no alert box
// per decision.
func (v *viewer) checkEgressSummary(decisions int) {
	type egress struct {
		Title         string
		Hosts         []string
		Open, Listed  int
		Alerts        int
		ListedVisible bool
	}
	c, cancelEval := context.WithTimeout(v.tab, 10*time.Second)
	defer cancelEval()
	eg, err := chromedp.Run(c, chromedp.Evaluate[egress](`(() => {
		const e = document.querySelector('header.run .egress');
		if (!e) return {};
		const d = e.querySelector('details');
		return {
			Title: e.querySelector('h2').textContent,
			Hosts: [...e.querySelectorAll('table.hosts tbody tr')].map(r => r.innerText.replace(/\s+/g, ' ').trim()),
			Open: d.open ? 1 : 0, Listed: d.querySelectorAll('li').length,
			ListedVisible: [...d.querySelectorAll('li')].some(li => li.checkVisibility()),
			Alerts: [...document.querySelectorAll('header.run .alert')].filter(a => a.textContent.startsWith('egress ')).length,
		};
	})()`))
	if err != nil {
		v.t.Fatal(err)
	}
	v.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo({top: 0, behavior: 'instant'})`))
	v.snap("viewer-6-header-egress")
	if !strings.Contains(eg.Title, fmt.Sprintf("%d connection", decisions)) || len(eg.Hosts) == 0 || eg.Listed != decisions ||
		eg.Open != 0 || eg.ListedVisible || eg.Alerts != 0 {
		v.t.Errorf("egress summary = %+v; want %d decisions summed up per host, their list folded, and no box per decision", eg, decisions)
	}
}

// checkLoadedNothing checks that the page at report requested nothing but
// itself and data: URLs, and logged nothing to its console.
func (v *viewer) checkLoadedNothing(report string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, u := range v.requests {
		if u != "file://"+report && !strings.HasPrefix(u, "data:") {
			v.t.Errorf("the report requested %s: it must load nothing", u)
		}
	}
	for _, c := range v.console {
		v.t.Errorf("the report's page logged %s", c)
	}
}
