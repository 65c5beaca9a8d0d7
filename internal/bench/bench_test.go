package bench

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

func integration(t testing.TB) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs the benchmark's browser tests")
	}
}

// TestStepsShowTheFinalState checks the step the benchmark times, in both
// modes, on both pages: every screenshot shows the click's final effect.
func TestStepsShowTheFinalState(t *testing.T) {
	integration(t)
	s, err := startSite()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &runner{site: s}
	for _, mode := range []cdp.Mode{cdp.FrameControl, cdp.Screencast} {
		b, err := r.browser(t.Context(), mode)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(t.Context()) })
		for _, page := range []string{pageStatic, pageLoading} {
			t.Run(mode.String()+"/"+page, func(t *testing.T) {
				d, err := b.NewDisplay(t.Context(), cdp.DisplayConfig{Viewport: modelSize, DPR: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close(t.Context())
				tb, err := openTab(t.Context(), d, s.url(page))
				if err != nil {
					t.Fatal(err)
				}
				for i := range 6 {
					took, shot, err := tb.step(t.Context(), screen.CaptureOptions{Size: modelSize, Format: screen.PNG})
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if !shot.right() {
						t.Errorf("step %d (%v): the screenshot does not show the click's final effect", i, took)
					}
				}
			})
		}
	}
}

// TestCountWrong checks the check that runs after the timing: a screenshot
// is right only when it decodes and shows the swatch in the state wanted.
func TestCountWrong(t *testing.T) {
	shot := func(c color.RGBA) []byte {
		img := image.NewRGBA(image.Rect(0, 0, int(modelSize.W), int(modelSize.H)))
		draw.Draw(img, img.Bounds(), &image.Uniform{c}, image.Point{}, draw.Src)
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	on, off, grey := shot(swatchOn), shot(swatchOff), shot(color.RGBA{128, 128, 128, 255})
	for _, c := range []struct {
		shots []shotCheck
		want  int
	}{
		{[]shotCheck{{on, true}, {off, false}}, 0},
		{[]shotCheck{{on, false}, {off, false}, {off, true}}, 2},
		{[]shotCheck{{grey, true}, {grey, false}}, 2},               // mid-change
		{[]shotCheck{{[]byte("not a png"), false}, {nil, true}}, 2}, // cannot be decoded
	} {
		if got := countWrong(c.shots); got != c.want {
			t.Errorf("countWrong(%d shots) = %d, want %d", len(c.shots), got, c.want)
		}
	}
}

func TestFigureComparisonAndOutput(t *testing.T) {
	base := Figure{Section: "step", Name: "baseline", Unit: "ms", N: 5, P50: 120, P95: 200}
	f := Figure{Section: "step", Name: "spotter", Unit: "ms", N: 5, P50: 40, P95: 60}
	f.against(base)
	if f.Ratio != 3 || f.Baseline != "baseline" {
		t.Errorf("against: ratio %v baseline %q, want 3 and baseline", f.Ratio, f.Baseline)
	}
	f.target(">= 3x", f.Ratio >= 3)
	var table, lines strings.Builder
	if err := WriteTable(&table, []Figure{f, base}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spotter", "40.0 ms", "3.00x", "met: >= 3x"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := WriteJSON(&lines, []Figure{f, base}); err != nil {
		t.Fatal(err)
	}
	var back []Figure
	for _, l := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		var g Figure
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		back = append(back, g)
	}
	if len(back) != 2 || back[0].Ratio != 3 || back[0].Met == nil || !*back[0].Met {
		t.Errorf("JSON lines round trip: %+v", back)
	}
}

func TestTreePSSCountsChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	n, err := treePSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Errorf("treePSS with a child running = %d, want > 0", n)
	}
}

// TestRunSmall runs every browser section at a tiny size and checks that
// each figure it must produce is there, with sane values.
func TestRunSmall(t *testing.T) {
	integration(t)
	var got []Figure
	figs, err := Run(t.Context(), Options{Sections: []string{"tokens", "capture", "step", "start", "concurrency"},
		Rounds: 2, MaxSessions: 2, StepsPerSession: 2, Report: func(f Figure) { got = append(got, f) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(figs) {
		t.Errorf("reported %d figures, returned %d", len(got), len(figs))
	}
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	for _, name := range []string{
		"spotter frame-control dpr1 static", "spotter frame-control dpr2 static",
		"baseline playwright dpr1 static", "baseline playwright dpr2 loading",
		"spotter frame-control capture 1280x800 png", "spotter anthropic dpr2 1280x800 tokens",
		"shared browser, a context per session: 2 sessions, steps back to back",
		"shared browser, a new context: create to first screenshot", "a browser of its own: create to first screenshot",
		"baseline playwright: launch, new page, goto, screenshot", "shared browser, a new context: memory per session",
		"a browser of its own, readied on a blank page: create to first screenshot",
		"page fault, shared memory (memfd), per 4 KiB page", // every run's first figures
	} {
		f, ok := byName[name]
		if !ok {
			t.Errorf("no figure %q", name)
			continue
		}
		if f.N == 0 && f.Value == 0 {
			t.Errorf("figure %q is empty: %+v", name, f)
		}
	}
	if f := byName["shared browser, a new context: create to first screenshot"]; f.Ratio <= 0 || f.Wrong != 0 {
		t.Errorf("start figure not compared with its baseline, or its screenshot wrong: %+v", f)
	}
	if f := byName["spotter frame-control dpr1 static"]; f.Ratio <= 0 || f.Baseline == "" || f.Wrong != 0 {
		t.Errorf("step figure not compared with its baseline, or wrong: %+v", f)
	}
}

// The guard section compares this run's step, overhead and concurrency
// figures with issue 17's floors and its starts and memory with issue
// 33's, and says which fell below.
func TestGuards(t *testing.T) {
	figs := []Figure{
		{Name: "spotter frame-control dpr1 static", Ratio: 2.6},
		{Name: "spotter frame-control dpr2 static", Ratio: 4.0},
		{Name: "executor API overhead, paired (each round's round trip minus its step)", N: 20, P50: 2.9},
		{Name: "shared browser, a context per session: most sessions with p95 step < 250 ms, steps back to back", Value: 2},
		// Issue 33's: the warm start against its floor in the same run
		// (250/150 = 1.67x, met), the cold start against a browser of its
		// own (2000/800 = 2.5x, missed), and a sandbox's memory.
		{Name: "containerd sandbox, warm pool: create to first screenshot", N: 5, P50: 250},
		{Name: "a browser of its own, readied on a blank page: create to first screenshot", N: 5, P50: 150},
		{Name: "containerd sandbox, cold: create to first screenshot", N: 5, P50: 2000},
		{Name: "a browser of its own: create to first screenshot", N: 5, P50: 800},
		{Name: "containerd sandbox, cold: memory per session", Unit: "MB", Value: 101},
	}
	var got []Figure
	guards(figs, func(f Figure) { got = append(got, f) })
	want := map[string]bool{
		"step, DPR 1, static page: times faster than Playwright":           true,
		"step, DPR 2, static page: times faster than Playwright":           false,
		"executor API overhead, paired p50":                                true,
		"warm sandbox's first screenshot: times the floor of a warm start": true,
		"cold sandbox's first screenshot: times a browser of its own":      false,
		"memory per sandboxed session":                                     true,
	}
	if len(got) != len(want) {
		t.Fatalf("guards = %+v, want %d figures (none for a ramp without think time)", got, len(want))
	}
	for _, g := range got {
		met, ok := want[g.Name]
		if !ok || g.Met == nil || *g.Met != met || g.Section != "guard" {
			t.Errorf("guard %q met=%v, want %v", g.Name, g.Met, met)
		}
		if strings.HasPrefix(g.Name, "warm sandbox") && (g.Value < 1.66 || g.Value > 1.67 || !strings.Contains(g.Target, "issue 33")) {
			t.Errorf("warm start guard = %+v, want 1.67x against issue 33's floor", g)
		}
	}
	// Without its floor in the run, a ratio guard says nothing.
	got = nil
	guards([]Figure{{Name: "containerd sandbox, warm pool: create to first screenshot", N: 5, P50: 250}}, func(f Figure) { got = append(got, f) })
	if len(got) != 0 {
		t.Errorf("guards without the floor's figure = %+v, want none", got)
	}
}

// Every run starts with the machine's page fault and system call costs,
// each a positive time, the page faults beside the huge page settings.
func TestMachineFigures(t *testing.T) {
	var got []Figure
	r := &runner{report: func(f Figure) { got = append(got, f) }}
	r.machine()
	if len(got) != 3 {
		t.Fatalf("machine figures = %+v, want 3", got)
	}
	for _, f := range got {
		if f.Section != "machine" || f.Unit != "µs" || f.Value <= 0 {
			t.Errorf("figure %+v: want a positive time in µs of section machine", f)
		}
		if strings.HasPrefix(f.Name, "page fault") && !strings.Contains(f.Note, "transparent huge pages") {
			t.Errorf("figure %q does not name the huge page setting: %q", f.Name, f.Note)
		}
	}
	for in, want := range map[string]string{
		"always [madvise] never\n":                       "madvise",
		"always within_size advise [never] deny force\n": "never",
		"[always] defer defer+madvise madvise never\n":   "always",
		"garbage": "unknown",
	} {
		if got := selected([]byte(in)); got != want {
			t.Errorf("selected(%q) = %q, want %q", in, got, want)
		}
	}
}
