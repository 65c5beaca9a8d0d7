package bench

import (
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/screen/cdp"
)

// A floor is a figure issue 17 brought to a level measured on this
// machine, which later changes must not fall below. The guard section
// compares this run's figure with it.
type floor struct {
	what string
	// figure finds the figure of this run the floor is about, and value
	// reads the number compared.
	figure func(f Figure) bool
	value  func(f Figure) float64
	unit   string
	// limit is the floor; higher says whether more is better.
	limit  float64
	higher bool
	note   string
}

// floors are issue 17's (docs/PERFORMANCE.md): the step 2.5x the same-run
// Playwright baseline at DPR 1 and 5.4x at DPR 2, the executor API's
// overhead 2.5-3.3 ms, and 96 sessions on one shared browser under a p95
// of 250 ms with 2 s of think time (its p95 was 113 ms).
var floors = []floor{
	{what: "step, DPR 1, static page: times faster than Playwright", unit: "x", limit: 2.5, higher: true,
		figure: named(fmt.Sprintf("spotter %v dpr1 static", cdp.FrameControl)), value: func(f Figure) float64 { return f.Ratio },
		note: "issue 17 measured 2.07-2.87x over its stops"},
	{what: "step, DPR 2, static page: times faster than Playwright", unit: "x", limit: 5.4, higher: true,
		figure: named(fmt.Sprintf("spotter %v dpr2 static", cdp.FrameControl)), value: func(f Figure) float64 { return f.Ratio },
		note: "issue 17 measured 4.5-5.8x"},
	{what: "executor API overhead, paired p50", unit: "ms", limit: 3.3,
		figure: func(f Figure) bool { return strings.HasPrefix(f.Name, "executor API overhead, paired") },
		value:  func(f Figure) float64 { return f.P50 },
		note:   "issue 17 measured 2.5-3.3 ms"},
	{what: "sessions on one shared browser with p95 step < 250 ms, think time", unit: "sessions", limit: 96, higher: true,
		figure: func(f Figure) bool {
			return strings.HasPrefix(f.Name, "shared browser, a context per session: most sessions with p95 step < 250 ms, ") &&
				!strings.Contains(f.Name, "back to back")
		},
		value: func(f Figure) float64 { return f.Value },
		note:  "issue 17: 96 sessions at p95 113 ms with --think 2s; a ramp capped below 96 cannot reach it"},
}

func named(name string) func(Figure) bool { return func(f Figure) bool { return f.Name == name } }

// guards reports, for each floor whose figure this run measured, whether
// the figure is at or above it.
func guards(figs []Figure, report func(Figure)) {
	for _, fl := range floors {
		for _, f := range figs {
			if !fl.figure(f) {
				continue
			}
			v := fl.value(f)
			g := Figure{Section: "guard", Name: fl.what, Unit: fl.unit, Value: v, Baseline: f.Name,
				Note: joinNote(fl.note, f.Note)}
			if fl.higher {
				g.target(fmt.Sprintf(">= %g %s (issue 17's floor)", fl.limit, fl.unit), v >= fl.limit)
			} else {
				g.target(fmt.Sprintf("<= %g %s (issue 17's floor)", fl.limit, fl.unit), v <= fl.limit)
			}
			report(g)
			break
		}
	}
}
