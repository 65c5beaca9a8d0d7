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
	decisions := res.Sandbox.Allowed + res.Sandbox.Refused
	steps := res.Outcome.Steps

	// The operator's browser, in a tab that records every request.
	var mu sync.Mutex
	var requests, console []string
	tab, closeTab := chromedp.NewContext(operatorTab(t), chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if strings.HasPrefix(u, "data:") {
				u = u[:min(len(u), 40)]
			}
			requests = append(requests, u)
		case *runtime.EventConsoleAPICalled:
			console = append(console, string(ev.Type))
		case *runtime.EventExceptionThrown:
			console = append(console, "exception: "+ev.ExceptionDetails.Text)
		}
	}))
	t.Cleanup(closeTab)
	// The tab lives as long as the context of its first run: tab itself.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	shots := t.ArtifactDir()
	t.Logf("screenshots of the viewer: %s", shots)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(tab, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	state := func() viewerState {
		t.Helper()
		c, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		s, err := chromedp.Run(c, chromedp.Evaluate[viewerState](viewerStateJS))
		if err != nil {
			t.Fatalf("read the viewer's state: %v", err)
		}
		return s
	}
	snap := func(name string) {
		t.Helper()
		c, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", name, p)
	}
	// press sends a key and waits for the viewer to show step want.
	press := func(key, want string) viewerState {
		t.Helper()
		do("press "+key, chromedp.KeyEvent(key),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.hash === %q`, want)))
		return state()
	}
	only := func(s viewerState, id string) {
		t.Helper()
		if len(s.Visible) != 1 || s.Visible[0] != id || s.Current != "#"+id || s.Hash != "#"+id {
			t.Errorf("viewer shows %v (timeline marks %q, hash %q), want only %s", s.Visible, s.Current, s.Hash, id)
		}
	}

	do("open the report", chromedp.Navigate("file://"+res.Report),
		chromedp.Poll[chromedp.Void](`document.body.classList.contains('viewer')`))
	s := state()
	snap("viewer-1-first-step")
	only(s, "step-1")
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

	s = press(kb.ArrowRight, "#step-2")
	only(s, "step-2")
	snap("viewer-2-arrow-right")
	only(press("j", "#step-3"), "step-3")
	only(press(kb.ArrowLeft, "#step-2"), "step-2")
	s = press(kb.End, fmt.Sprintf("#step-%d", steps))
	only(s, fmt.Sprintf("step-%d", steps))
	snap("viewer-3-last-step")
	only(press(kb.Home, "#step-1"), "step-1")
	do("press k on the first step", chromedp.KeyEvent("k"))
	only(state(), "step-1") // no step before the first

	do("click the third step in the timeline", chromedp.Click(`ol.timeline li:nth-child(3) a`),
		chromedp.Poll[chromedp.Void](`location.hash === '#step-3'`))
	only(state(), "step-3")
	do("click Next", chromedp.Click(`[data-go="next"]`), chromedp.Poll[chromedp.Void](`location.hash === '#step-4'`))
	only(state(), "step-4")
	snap("viewer-4-timeline-and-next")

	do("show every step", chromedp.KeyEvent("a"), chromedp.Poll[chromedp.Void](`document.body.classList.contains('all')`))
	if s := state(); len(s.Visible) != steps {
		t.Errorf("with every step shown, %d sections are on screen, want %d", len(s.Visible), steps)
	}
	snap("viewer-5-all-steps")
	do("back to one step", chromedp.KeyEvent("a"), chromedp.Poll[chromedp.Void](`!document.body.classList.contains('all')`))

	// The header sums the egress decisions up per host; the list is folded.
	type egress struct {
		Title         string
		Hosts         []string
		Open, Listed  int
		Alerts        int
		ListedVisible bool
	}
	c, cancelEval := context.WithTimeout(tab, 10*time.Second)
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
		t.Fatal(err)
	}
	do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo({top: 0, behavior: 'instant'})`))
	snap("viewer-6-header-egress")
	if !strings.Contains(eg.Title, fmt.Sprintf("%d connection", decisions)) || len(eg.Hosts) == 0 || eg.Listed != decisions ||
		eg.Open != 0 || eg.ListedVisible || eg.Alerts != 0 {
		t.Errorf("egress summary = %+v; want %d decisions summed up per host, their list folded, and no box per decision", eg, decisions)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if u != "file://"+res.Report && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report requested %s: it must load nothing", u)
		}
	}
	for _, c := range console {
		t.Errorf("the report's page logged %s", c)
	}
}
