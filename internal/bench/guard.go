package bench

import (
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/screen/cdp"
)

// A floor is a figure an issue brought to a level it measured (issue 17's
// step, overhead and concurrency; issue 33's starts and memory), which
// later changes must not fall below. The guard section compares this
// run's figure with it.
type floor struct {
	what string
	// figure finds the figure of this run the floor is about, and value
	// reads the number compared.
	figure func(f Figure) bool
	value  func(f Figure) float64
	unit   string
	// over, when set, finds a second figure of the same run, and the
	// value compared is the first's p50 over the second's: a ratio that
	// holds from one machine to another where the times do not.
	over func(f Figure) bool
	// limit is the floor; higher says whether more is better.
	limit  float64
	higher bool
	note   string
	issue  int // the issue that measured it
}

// floors are issue 17's (docs/PERFORMANCE.md): the step 2.5x the same-run
// Playwright baseline at DPR 1 and 5.4x at DPR 2, the executor API's
// overhead 2.5-3.3 ms, and 96 sessions on one shared browser under a p95
// of 250 ms with 2 s of think time (its p95 was 113 ms); and issue 33's,
// each measured against its floor in the same run: a warm sandbox's start
// 1.5-1.8 times a browser readied on a blank page, a cold one's 2.0 times
// a browser of its own, and 99-102 MB a sandboxed session.
var floors = []floor{
	{what: "step, DPR 1, static page: times faster than Playwright", unit: "x", limit: 2.5, higher: true, issue: 17,
		figure: named(fmt.Sprintf("spotter %v dpr1 static", cdp.FrameControl)), value: func(f Figure) float64 { return f.Ratio },
		note: "issue 17 measured 2.07-2.87x over its stops"},
	{what: "step, DPR 2, static page: times faster than Playwright", unit: "x", limit: 5.4, higher: true, issue: 17,
		figure: named(fmt.Sprintf("spotter %v dpr2 static", cdp.FrameControl)), value: func(f Figure) float64 { return f.Ratio },
		note: "issue 17 measured 4.5-5.8x"},
	{what: "executor API overhead, paired p50", unit: "ms", limit: 3.3, issue: 17,
		figure: func(f Figure) bool { return strings.HasPrefix(f.Name, "executor API overhead, paired") },
		value:  func(f Figure) float64 { return f.P50 },
		note:   "issue 17 measured 2.5-3.3 ms"},
	{what: "sessions on one shared browser with p95 step < 250 ms, think time", unit: "sessions", limit: 96, higher: true, issue: 17,
		figure: func(f Figure) bool {
			return strings.HasPrefix(f.Name, "shared browser, a context per session: most sessions with p95 step < 250 ms, ") &&
				!strings.Contains(f.Name, "back to back")
		},
		value: func(f Figure) float64 { return f.Value },
		note:  "issue 17: 96 sessions at p95 113 ms with --think 2s; a ramp capped below 96 cannot reach it"},
	{what: "warm sandbox's first screenshot: times the floor of a warm start", unit: "x", limit: 2, issue: 33,
		figure: named("containerd sandbox, warm pool: create to first screenshot"),
		over:   named(startFloor + ": create to first screenshot"),
		note:   "issue 33 measured 1.5-1.8x; the floor is a browser readied on a blank page, no sandbox"},
	{what: "cold sandbox's first screenshot: times a browser of its own", unit: "x", limit: 2.2, issue: 33,
		figure: named("containerd sandbox, cold: create to first screenshot"),
		over:   named("a browser of its own: create to first screenshot"),
		note:   "issue 33 measured 1.99-2.0x with the default 1-CPU limit"},
	{what: "memory per sandboxed session", unit: "MB", limit: 105, issue: 33,
		figure: named("containerd sandbox, cold: memory per session"), value: func(f Figure) float64 { return f.Value },
		note: "issue 33 measured 99.0-102.3 MB"},
}

func named(name string) func(Figure) bool { return func(f Figure) bool { return f.Name == name } }

// of returns the floor's value of f among figs, and false when the run
// did not measure what it needs.
func (fl floor) of(f Figure, figs []Figure) (float64, bool) {
	if fl.over == nil {
		return fl.value(f), true
	}
	for _, o := range figs {
		if fl.over(o) && o.P50 > 0 {
			return f.P50 / o.P50, true
		}
	}
	return 0, false
}

// guards reports, for each floor whose figure this run measured, whether
// the figure is at or above it.
func guards(figs []Figure, report func(Figure)) {
	for _, fl := range floors {
		for _, f := range figs {
			if !fl.figure(f) {
				continue
			}
			v, ok := fl.of(f, figs)
			if !ok {
				break
			}
			g := Figure{Section: "guard", Name: fl.what, Unit: fl.unit, Value: v, Baseline: f.Name,
				Note: joinNote(fl.note, f.Note)}
			if fl.higher {
				g.target(fmt.Sprintf(">= %g %s (issue %d's floor)", fl.limit, fl.unit, fl.issue), v >= fl.limit)
			} else {
				g.target(fmt.Sprintf("<= %g %s (issue %d's floor)", fl.limit, fl.unit, fl.issue), v <= fl.limit)
			}
			report(g)
			break
		}
	}
}
