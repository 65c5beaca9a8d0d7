// Package bench is `spotter bench`: it measures, in one run on one machine,
// what a computer-use step costs in Spotter, side by side with a baseline
// measured in the same run, and reports medians, 95th percentiles and their
// ratios. The machines this runs on are noisy, so every figure that has a
// baseline is compared with it rather than with a fixed number, and the
// configurations of a section run interleaved, round by round.
//
// Every run begins with the machine's figures (machine.go): the cost of a
// page fault on fresh anonymous and shared memory and of a system call,
// with the kernel's transparent huge page settings, without which figures
// of runs on different machines do not compare.
//
// Sections:
//   - step: a click in, a settled model-sized screenshot out, at DPR 1 and 2,
//     on a static page and on a page that loads and animates after the click,
//     in each display mode; the baseline is playwright-core (from npm, run by
//     Node) doing page.mouse.click then page.screenshot on the same pages.
//     Every image is checked: a screenshot that does not show the click's
//     final effect counts as wrong.
//   - capture: capture and encode alone, at model size, PNG and JPEG.
//   - start: create to first screenshot, for a context of a shared browser,
//     a browser of its own, a containerd sandbox started on demand and one
//     from a warm pool, beside Playwright's launch (or new context), new
//     page, goto and screenshot; and the memory of one session of each.
//   - concurrency: sessions added until the p95 step doubles, on a shared
//     browser (a context per session), a browser per session, and sandboxed.
//   - mcp: the memory an MCP session costs, as a context of a shared
//     browser (spotter mcp's default) against a browser each.
//   - sandbox: containerd sandbox create to first screenshot.
//   - server: the executor API's round trip minus the step, and SSE fan-out
//     (supplied by the caller through Options.Server).
//   - tokens: image bytes and estimated image tokens per step under each
//     provider's size rule, against a full-resolution screenshot.
//   - live: the panel's live view (GET /session/:id/live) as a client gets
//     it: frames per second while a page changes (session idle, and
//     stepping), frames while it does not, and the latency from a change
//     of the page to the client (live.go).
//   - guard (after the others): the step, overhead and concurrency figures
//     of this run against the floors issue 17 measured, and the starts
//     (each against its floor in the same run) and a sandbox's memory
//     against issue 33's (guard.go).
//   - context: a scripted 50-step task through each provider adapter
//     against its fake endpoint, once per context strategy (Spotter's
//     policy, every screenshot every time, the provider's reference
//     implementation's), with the billed-equivalent input tokens, bytes and
//     largest request of each (context.go, contextcost.go).
//
// docs/PERFORMANCE.md has the method and the numbers.
package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/stats"
)

// Sections lists the sections in the order they run. The machine's
// figures come first in every run; `--sections machine` asks for them
// alone.
var Sections = []string{"machine", "tokens", "context", "capture", "step", "start", "concurrency", "mcp", "sandbox", "server", "live"}

// viewportPt is the viewport of every page, as a point for scaling.
var viewportPt = actions.Pt(1280, 800)

// Options configures a run. Zero values are documented defaults.
type Options struct {
	Sections []string // empty: all of Sections
	Rounds   int      // samples per configuration; default 30
	// MaxSessions caps the concurrency ramp; default 32.
	MaxSessions int
	// StepsPerSession is how many steps each session takes at each level of
	// the ramp; default 8.
	StepsPerSession int
	// Think is how long each session of the ramp waits between its steps,
	// standing for the model's turn (seconds, for real providers); 0 runs
	// the steps back to back, the worst case.
	Think time.Duration
	// Headless and Chromium are the browsers: chromium-headless-shell for
	// FrameControl and Debian's chromium for Screencast and the baseline;
	// empty means found on PATH or in /usr/lib/chromium.
	Headless, Chromium string
	// DriverDir holds playwright-core for the baseline; empty means
	// DefaultDriverDir. Node is the node binary; empty: DriverDir/node or
	// node on PATH.
	DriverDir, Node string
	// Containerd is containerd's socket, for sandboxed sessions and sandbox
	// start; empty skips both, and the run says so. Agent is the program
	// the sandboxes run (a spotter binary); empty means this program.
	Containerd, Agent string
	// Server, when set, measures the server section.
	Server func(ctx context.Context, report func(Figure)) error
	// Report receives each figure as it is measured.
	Report func(Figure)
	Logger *slog.Logger
}

func (o Options) runs(section string) bool {
	return len(o.Sections) == 0 || slices.Contains(o.Sections, section)
}

// Figure is one measured number, or one latency distribution.
type Figure struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Unit    string `json:"unit"` // "ms", "steps/s", "MB", "bytes", "tokens", "sessions"
	// N is the number of samples; P50 and P95 summarize them, and Value is
	// the figure when it is not a distribution.
	N     int     `json:"n,omitzero"`
	P50   float64 `json:"p50,omitzero"`
	P95   float64 `json:"p95,omitzero"`
	Value float64 `json:"value,omitzero"`
	// Wrong counts screenshots that did not show the action's final effect.
	Wrong int `json:"wrong,omitzero"`
	// Baseline names the figure this one is compared with, and Ratio is the
	// baseline's median (or value) over this one's: 3 means 3x faster or
	// 3x smaller.
	Baseline string  `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitzero"`
	// Target is the goal, in words, and Met whether this run reached it.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	Note   string `json:"note,omitempty"`
	// ContextCost, in the context section, adds its fields to the
	// figure's JSON line.
	*ContextCost
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// latency makes a Figure from samples.
func latency(section, name string, samples []time.Duration) Figure {
	s := stats.Summarize(samples)
	return Figure{Section: section, Name: name, Unit: "ms", N: s.N, P50: ms(s.P50), P95: ms(s.P95)}
}

// against sets f's comparison with base (a speedup or a size ratio).
func (f *Figure) against(base Figure) {
	f.Baseline = base.Name
	num, den := cmp.Or(base.P50, base.Value), cmp.Or(f.P50, f.Value)
	if den > 0 {
		f.Ratio = num / den
	}
}

func (f *Figure) target(text string, met bool) {
	f.Target, f.Met = text, &met
}

// Run measures the sections o asks for and returns every figure. A section
// that cannot run (no containerd for the sandbox) is reported as a figure
// with a note, not an error; an error means the run could not measure
// what it must (no browser, a broken baseline).
func Run(ctx context.Context, o Options) ([]Figure, error) {
	o.Rounds = cmp.Or(o.Rounds, 30)
	o.MaxSessions = cmp.Or(o.MaxSessions, 32)
	o.StepsPerSession = cmp.Or(o.StepsPerSession, 8)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var figs []Figure
	report := func(f Figure) {
		figs = append(figs, f)
		if o.Report != nil {
			o.Report(f)
		}
	}
	s, err := startSite()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	r := &runner{o: o, site: s, report: report}
	r.machine()
	for _, name := range Sections {
		if !o.runs(name) {
			continue
		}
		var err error
		switch name {
		case "machine": // measured above, in every run
		case "tokens":
			err = r.tokens(ctx)
		case "context":
			err = r.contextSection(ctx)
		case "capture":
			err = r.capture(ctx)
		case "step":
			err = r.step(ctx)
		case "start":
			err = r.start(ctx)
		case "concurrency":
			err = r.concurrency(ctx)
		case "mcp":
			err = r.mcpMemory(ctx)
		case "sandbox":
			err = r.sandbox(ctx)
		case "live":
			err = r.live(ctx)
		case "server":
			if o.Server == nil {
				report(Figure{Section: "server", Name: "server", Note: "not measured: no server given"})
				continue
			}
			err = o.Server(ctx, report)
		}
		if err != nil {
			return figs, fmt.Errorf("%s: %w", name, err)
		}
	}
	guards(slices.Clone(figs), report)
	return figs, nil
}

type runner struct {
	o      Options
	site   *site
	report func(Figure)
}

// WriteTable writes figs as an aligned table.
func WriteTable(w io.Writer, figs []Figure) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tFIGURE\tP50 / VALUE\tP95\tN\tWRONG\tVS BASELINE\tTARGET")
	for _, f := range figs {
		main := ""
		switch {
		case f.N > 0:
			main = fmt.Sprintf("%.1f %s", f.P50, f.Unit)
		case f.Unit != "":
			main = fmt.Sprintf("%.4g %s", f.Value, f.Unit)
		}
		p95 := ""
		if f.N > 0 {
			p95 = fmt.Sprintf("%.1f %s", f.P95, f.Unit)
		}
		n := ""
		if f.N > 0 {
			n = fmt.Sprint(f.N)
		}
		wrong := ""
		if f.Wrong > 0 {
			wrong = fmt.Sprint(f.Wrong)
		}
		vs := ""
		if f.Ratio > 0 {
			vs = fmt.Sprintf("%.2fx", f.Ratio)
		}
		target := f.Target
		if f.Met != nil {
			target = map[bool]string{true: "met: ", false: "MISSED: "}[*f.Met] + target
		}
		if f.Note != "" {
			target = strings.TrimSpace(target + " (" + f.Note + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Section, f.Name, main, p95, n, wrong, vs, target)
	}
	return tw.Flush()
}

// WriteJSON writes one JSON line per figure.
func WriteJSON(w io.Writer, figs []Figure) error {
	enc := json.NewEncoder(w)
	for _, f := range figs {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}
