package bench

import (
	"context"
	"fmt"
	_ "image/jpeg" // decode JPEG screenshots
	_ "image/png"
	"math/rand/v2"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// modelSize is the screenshot sent to the model: a 1280x800 viewport fits
// every provider's rule at this size except OpenAI's and Gemini's tighter
// ones, which the tokens section covers.
var modelSize = screen.Size{W: 1280, H: 800}

// display is what the benchmark drives: a cdp.Display or a sandboxed one.
type display interface {
	Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error)
	Perform(ctx context.Context, m screen.Mapped) error
	Close(ctx context.Context) error
}

// tab is one display showing a benchmark page.
type tab struct {
	d  display
	on bool // the swatch's state after the clicks so far
}

func openTab(ctx context.Context, d display, url string) (*tab, error) {
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil {
		return nil, fmt.Errorf("open %s: %w", url, err)
	}
	// The model sees the page before it acts, and so does the benchmark:
	// input sent before the first capture may reach a page that is not
	// drawn yet.
	if _, err := d.Capture(ctx, screen.CaptureOptions{Size: modelSize, Format: screen.PNG}); err != nil {
		return nil, fmt.Errorf("open %s: first capture: %w", url, err)
	}
	return &tab{d: d}, nil
}

// step clicks the button and captures at size; it returns the time taken
// and the screenshot, which must show the click's final effect (a
// screenshot that cannot be decoded does not).
func (t *tab) step(ctx context.Context, o screen.CaptureOptions) (time.Duration, shotCheck, error) {
	start := time.Now()
	click := actions.Action{Kind: actions.Click, HasAt: true, At: buttonAt}
	if err := t.d.Perform(ctx, screen.Mapped{Action: click}); err != nil {
		return 0, shotCheck{}, fmt.Errorf("click: %w", err)
	}
	t.on = !t.on
	shot, err := t.d.Capture(ctx, o)
	if err != nil {
		return 0, shotCheck{}, fmt.Errorf("capture: %w", err)
	}
	return time.Since(start), shotCheck{png: shot.Data, on: t.on}, nil
}

// stepConfig is one configuration of the step section.
type stepConfig struct {
	name    string
	page    string
	dpr     float64
	tab     *tab   // Spotter
	base    string // the baseline's page id, for the baseline configurations
	samples []time.Duration
	shots   []shotCheck // checked after the last round
	err     error       // the step failed; the configuration is dropped from later rounds
}

func (r *runner) browser(ctx context.Context, mode cdp.Mode) (*cdp.Browser, error) {
	cfg := cdp.Config{Mode: mode, Flags: nil}
	switch mode {
	case cdp.FrameControl:
		cfg.Exec = r.o.Headless
	case cdp.Screencast:
		cfg.Exec = r.o.Chromium
	}
	b, err := cdp.Launch(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("launch %v browser: %w", mode, err)
	}
	return b, nil
}

func (r *runner) step(ctx context.Context) error {
	base, err := startBaseline(ctx, r.o.DriverDir, r.o.Node, r.o.Chromium)
	if err != nil {
		return err
	}
	defer base.Close()

	var configs []*stepConfig
	for _, mode := range []cdp.Mode{cdp.FrameControl, cdp.Screencast} {
		b, err := r.browser(ctx, mode)
		if err != nil {
			return err
		}
		defer b.Close(context.WithoutCancel(ctx))
		for _, dpr := range []float64{1, 2} {
			for _, page := range []string{pageStatic, pageLoading} {
				d, err := b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize, DPR: dpr})
				if err != nil {
					return err
				}
				defer d.Close(context.WithoutCancel(ctx))
				t, err := openTab(ctx, d, r.site.url(page))
				if err != nil {
					return err
				}
				configs = append(configs, &stepConfig{name: fmt.Sprintf("spotter %v dpr%g %s", mode, dpr, page),
					page: page, dpr: dpr, tab: t})
			}
		}
	}
	for _, dpr := range []float64{1, 2} {
		for _, page := range []string{pageStatic, pageLoading} {
			id := fmt.Sprintf("dpr%g-%s", dpr, page)
			if err := base.open(ctx, id, r.site.url(page), dpr); err != nil {
				return err
			}
			configs = append(configs, &stepConfig{name: fmt.Sprintf("baseline playwright dpr%g %s", dpr, page),
				page: page, dpr: dpr, base: id})
		}
	}
	baseOn := map[string]bool{}
	capture := screen.CaptureOptions{Size: modelSize, Format: screen.PNG}
	// Warm up once, then interleave: each round runs every configuration
	// once, in a new random order, so that load from elsewhere spreads over
	// all of them.
	for round := -1; round < r.o.Rounds; round++ {
		order := rand.Perm(len(configs))
		for _, i := range order {
			c := configs[i]
			if c.err != nil {
				continue
			}
			var took time.Duration
			var shot shotCheck
			var err error
			if c.base != "" {
				baseOn[c.base] = !baseOn[c.base]
				took, shot, err = base.step(ctx, c.base, baseOn[c.base])
			} else {
				took, shot, err = c.tab.step(ctx, capture)
			}
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				c.err = err
				continue
			}
			if round < 0 {
				continue
			}
			c.samples = append(c.samples, took)
			c.shots = append(c.shots, shot)
		}
	}
	figs := map[string]Figure{}
	for _, c := range configs {
		f := latency("step", c.name, c.samples)
		f.Wrong = countWrong(c.shots)
		figs[c.name] = f
	}
	for _, c := range configs {
		f := figs[c.name]
		if c.base == "" {
			f.against(figs[fmt.Sprintf("baseline playwright dpr%g %s", c.dpr, c.page)])
			if c.page == pageStatic && c.name == fmt.Sprintf("spotter %v dpr%g %s", cdp.FrameControl, c.dpr, c.page) {
				want := map[float64]float64{1: 3, 2: 5}[c.dpr]
				f.target(fmt.Sprintf(">= %gx faster than the baseline, every screenshot right", want), f.Ratio >= want && f.Wrong == 0)
			}
		} else {
			f.Note = "playwright-core " + base.version + " naive click + page.screenshot at full resolution"
		}
		if f.Wrong > 0 {
			f.Note = joinNote(f.Note, fmt.Sprintf("%d of %d screenshots did not show the click's final effect", f.Wrong, f.N))
		}
		if c.err != nil {
			f.Note = joinNote(f.Note, fmt.Sprintf("FAILED after %d steps: %v", len(c.samples), c.err))
			if f.Met != nil {
				f.target(f.Target, false)
			}
		}
		r.report(f)
	}
	return nil
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
