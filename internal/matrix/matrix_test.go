package matrix

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

var (
	only   = flag.String("matrix.run", "", "run only the cells whose name (display/mode/DPR, such as chromium/containerd/1.5) matches this regular expression")
	update = flag.Bool("update", false, "write the table into docs/ISOLATION.md")
)

// tableEnv names a file to write the table to as well (make test sets it,
// running the matrix among the other packages, and then prints the file).
const tableEnv = "SPOTTER_MATRIX_TABLE"

// The test binary is also the containerd sandboxes' agent ("agent ...").
func TestMain(m *testing.M) {
	isolatetest.AgentMain()
	code := m.Run()
	for _, s := range sandboxes {
		if err := s.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test sandboxes:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Isolation modes, as `--isolate` names them.
var modes = []string{"none", "local", "containerd"}

// dprs are the device pixel ratios of the browser displays.
var dprs = []float64{1, 1.5, 2}

// A cell is one display, in one mode, at one pixel ratio.
type cell struct {
	display string // wiring's backend
	mode    string
	dpr     float64
}

func (c cell) String() string { return fmt.Sprintf("%s/%s/%g", c.display, c.mode, c.dpr) }

// cells are every display in every mode at every pixel ratio.
func cells() []cell {
	var out []cell
	for _, d := range []string{wiring.Chromium, wiring.Playwright, wiring.Desktop} {
		for _, m := range modes {
			for _, r := range dprs {
				out = append(out, cell{d, m, r})
			}
		}
	}
	return out
}

// results holds each cell's outcomes, by behaviour.
var results = struct {
	sync.Mutex
	m map[cell]map[string]screentest.Outcome
}{m: map[cell]map[string]screentest.Outcome{}}

func record(c cell) screentest.Reporter {
	return func(o screentest.Outcome) {
		results.Lock()
		defer results.Unlock()
		if results.m[c] == nil {
			results.m[c] = map[string]screentest.Outcome{}
		}
		results.m[c][o.Behaviour] = o
	}
}

// TestMatrix runs the suites on every cell (cells()), those of independent
// cells in parallel (go test's -parallel), and then prints the table and
// checks docs/ISOLATION.md's copy of it.
func TestMatrix(t *testing.T) {
	isolatetest.Integration(t)
	var ran []cell
	match, err := regexp.Compile("^(" + *only + ")$")
	if err != nil {
		t.Fatalf("-matrix.run: %v", err)
	}
	t.Run("cells", func(t *testing.T) {
		for _, c := range cells() {
			if *only != "" && !match.MatchString(c.String()) {
				continue
			}
			ran = append(ran, c)
			t.Run(c.String(), func(t *testing.T) {
				t.Parallel()
				runCell(t, c)
			})
		}
	})
	md := render(ran)
	t.Logf("the behaviour matrix:\n%s", md)
	if file := os.Getenv(tableEnv); file != "" {
		if err := os.WriteFile(file, []byte(md), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(ran) == len(cells()) {
		checkDoc(t, md)
	}
}

// runCell runs the suites on one cell: the conformance suite and, on a
// browser, the browser behaviours, each on a display of its own; on a
// desktop, the refusals of what only a browser does.
func runCell(t *testing.T, c cell) {
	report := record(c)
	if words, refused := refusedCell(t, c); refused {
		for _, b := range behaviours(c.display) {
			report(screentest.Outcome{Behaviour: b, Refused: words})
		}
		return
	}
	open := opener(c)
	switch c.display {
	case wiring.Desktop:
		screentest.RunAt(t, caps[c.display], c.dpr, open, report)
		d := open(t, screentest.Options{Viewport: screen.Size{W: 900, H: 600}, DPR: 1})
		screentest.RunRefusals(t, d, report)
	default:
		screentest.RunAt(t, caps[c.display], c.dpr, open, report)
		screentest.RunBrowser(t, c.dpr, open, report)
	}
}

// The capabilities the displays declare, as their packages' conformance
// tests do: Chromium on chromedp all of them; Playwright's mouse has no
// back and forward buttons and its keyboard no keypad keys; a desktop
// (screen/vnc) loads no pages and has one pixel ratio.
var caps = map[string]screentest.Capability{
	wiring.Chromium: screentest.Pages | screentest.Pointer | screentest.BackForward | screentest.Keys | screentest.Keypad |
		screentest.Typing | screentest.Scroll | screentest.PixelRatio,
	wiring.Playwright: screentest.Pages | screentest.Pointer | screentest.Keys | screentest.Typing | screentest.Scroll |
		screentest.PixelRatio,
	wiring.Desktop: screentest.Pointer | screentest.Keys | screentest.Keypad | screentest.Typing | screentest.Scroll,
}

// behaviours are the rows of a display's table.
func behaviours(display string) []string {
	if display == wiring.Desktop {
		out := []string{"capture", "input"}
		for _, a := range []actions.Kind{actions.Navigate, actions.ListTabs, actions.SwitchTab, actions.CloseTab, actions.Dialog, actions.Upload} {
			out = append(out, a.String())
		}
		return out
	}
	return append([]string{"capture", "pointer", "keys", "typing", "scroll"}, screentest.Behaviours...)
}

// refusedCell opens the cell's display once to see whether the cell
// exists at all: a spec the wiring refuses (a desktop at DPR 1.5, a
// Playwright browser in a containerd sandbox) is a refusal in words for
// every behaviour.
func refusedCell(t *testing.T, c cell) (string, bool) {
	req := request(t, c, "http://127.0.0.1:1")
	req.Display.Width, req.Display.Height = 900, 600
	if err := req.Display.Check(); err != nil {
		return err.Error(), true
	}
	if c.display == wiring.Playwright && c.mode == "containerd" {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		d, err := wiring.OpenDisplay(ctx, req)
		if err == nil {
			d.Close(context.WithoutCancel(ctx))
			return "", false
		}
		if !errors.Is(err, wiring.ErrSpec) {
			t.Fatalf("OpenDisplay(%s) = %v, want a display or a refusal", c, err)
		}
		return err.Error(), true
	}
	return "", false
}

// opener opens the cell's display for a suite: through
// runner.DisplayRequest, with the suite's server allowed by the egress
// proxy of a sandboxed cell, as a task whose policy names its hosts.
func opener(c cell) screentest.Opener {
	return func(t *testing.T, o screentest.Options) screentest.Display {
		t.Helper()
		req := request(t, c, o.Pages, o.Other)
		req.Display.Width, req.Display.Height, req.Display.DPR = o.Viewport.W, o.Viewport.H, o.DPR
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		d, err := wiring.OpenDisplay(ctx, req)
		if err != nil {
			t.Fatalf("OpenDisplay(%s) = %v", c, err)
		}
		t.Cleanup(func() {
			if err := d.Close(context.Background()); err != nil {
				t.Errorf("Close(%s) = %v", c, err)
			}
		})
		return d
	}
}

// request is the display request of a task on the cell's display whose
// policy allows the hosts of pages.
func request(t *testing.T, c cell, pages ...string) wiring.DisplayRequest {
	var hosts []string
	for _, p := range pages {
		if p == "" {
			continue
		}
		u, err := url.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
	}
	task := runner.Task{Name: "matrix", Display: wiring.DisplaySpec{Backend: c.display, DPR: c.dpr}}
	o := runner.Options{Sandboxes: sandboxesFor(t, c.mode)}
	return runner.DisplayRequest(task, "", actions.Policy{Hosts: hosts}, o, func(string) {}, isolatetest.Logger())
}

// One Sandboxes per backend, as one spotter process has.
var (
	sandboxesMu sync.Mutex
	sandboxes   = map[isolate.Backend]*wiring.Sandboxes{}
)

// sandboxesFor returns the Sandboxes of a mode: nil for none.
func sandboxesFor(t *testing.T, mode string) *wiring.Sandboxes {
	t.Helper()
	var b isolate.Backend
	switch mode {
	case "none":
		return nil
	case "local":
		b = isolate.Local
	case "containerd":
		b = isolate.Containerd
	}
	sandboxesMu.Lock()
	defer sandboxesMu.Unlock()
	if s := sandboxes[b]; s != nil {
		return s
	}
	cfg := wiring.SandboxConfig{Backend: b, Logger: isolatetest.Logger()}
	if b == isolate.Containerd {
		cfg.Containerd = containerd.Config{Socket: isolatetest.Socket(t), Agent: os.Args[0], AgentArgs: []string{"agent"}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := wiring.NewSandboxes(ctx, cfg)
	if err != nil {
		t.Fatalf("NewSandboxes(%s) = %v", b, err)
	}
	sandboxes[b] = s
	return s
}

// render writes the tables of the cells that ran, one per display: a row
// per behaviour, a column per mode and pixel ratio; a cell is "pass",
// "refused (n)" with the words in note n below the table, "FAIL", or "-"
// when the behaviour does not apply (keys and typing at DPR 1 only).
func render(ran []cell) string {
	results.Lock()
	defer results.Unlock()
	var b bytes.Buffer
	var notes []string
	noteOf := func(words string) int {
		words = oneLine(words)
		if i := slices.Index(notes, words); i >= 0 {
			return i + 1
		}
		notes = append(notes, words)
		return len(notes)
	}
	for _, display := range []string{wiring.Chromium, wiring.Playwright, wiring.Desktop} {
		var cols []cell
		for _, c := range ran {
			if c.display == display {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n**%s**\n\n| behaviour |", display)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s %g |", c.mode, c.dpr)
		}
		b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(cols)) + "\n")
		for _, beh := range behaviours(display) {
			fmt.Fprintf(&b, "| %s |", beh)
			for _, c := range cols {
				o, ok := results.m[c][beh]
				switch {
				case !ok:
					b.WriteString(" - |")
				case o.Failed:
					b.WriteString(" **FAIL** |")
				case o.Refused != "":
					fmt.Fprintf(&b, " refused (%d) |", noteOf(o.Refused))
				default:
					b.WriteString(" pass |")
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n`-`: not run in that cell (keys and typing do not depend on the pixel ratio).\n")
	if len(notes) > 0 {
		b.WriteString("\nRefusals, in the display's words:\n\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%d. %s\n", i+1, n)
		}
	}
	return b.String()
}

// oneLine makes words fit a list item: no line breaks, and the test
// servers' ports, which vary between runs, as PORT.
func oneLine(s string) string {
	return ports.ReplaceAllString(strings.Join(strings.Fields(s), " "), "$1:PORT")
}

var ports = regexp.MustCompile(`(127\.0\.0\.1|localhost):[0-9]+`)

const (
	docPath  = "../../docs/ISOLATION.md"
	docBegin = "<!-- matrix: written by `go test ./internal/matrix -update` -->"
	docEnd   = "<!-- end of matrix -->"
)

// checkDoc checks that docs/ISOLATION.md holds md between its markers, or
// writes it there with -update.
func checkDoc(t *testing.T, md string) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no matrix between %q and %q", docPath, docBegin, docEnd)
	}
	cur := s[i+len(docBegin) : j]
	if cur == md {
		return
	}
	if *update {
		s = s[:i+len(docBegin)] + md + s[j:]
		if err := os.WriteFile(docPath, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's matrix differs from this run's (go test ./internal/matrix -update writes it):\n--- the doc's\n%s\n--- this run's\n%s", docPath, cur, md)
}
