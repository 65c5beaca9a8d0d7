package bench

import (
	"context"
	"fmt"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// providers are the size rules the tokens section compares: a provider and
// one current model of it.
var providers = []struct{ provider, model string }{
	{"anthropic", "claude-sonnet-4-5"},
	{"openai", "computer-use-preview"},
	{"gemini", "gemini-2.5-computer-use-preview-10-2025"},
	{"uitars", "ui-tars-1.5-7b"},
}

// tokens reports, per provider and DPR, the bytes of one step's screenshot
// and its estimated image tokens: Spotter's (captured at the rule's size)
// against a naive full-resolution PNG, which the provider would bill after
// shrinking it itself.
func (r *runner) tokens(ctx context.Context) error {
	b, err := r.browser(ctx, cdp.ModeAuto)
	if err != nil {
		return err
	}
	defer b.Close(context.WithoutCancel(ctx))
	for _, dpr := range []float64{1, 2} {
		d, err := b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize, DPR: dpr})
		if err != nil {
			return err
		}
		if _, err := openTab(ctx, d, r.site.url(pageStatic)); err != nil {
			d.Close(ctx)
			return err
		}
		full := screen.Size{W: int(1280 * dpr), H: int(800 * dpr)}
		naive, err := d.Capture(ctx, screen.CaptureOptions{Size: full, Format: screen.PNG})
		if err != nil {
			d.Close(ctx)
			return err
		}
		for _, p := range providers {
			size := screen.RuleFor(p.provider, p.model).Fit(modelSize)
			naiveBytes := Figure{Section: "tokens", Name: fmt.Sprintf("baseline %s dpr%g full-resolution png %dx%d bytes", p.provider, dpr, full.W, full.H),
				Unit: "bytes", Value: float64(len(naive.Data))}
			naiveTokens := Figure{Section: "tokens", Name: fmt.Sprintf("baseline %s dpr%g full-resolution tokens", p.provider, dpr),
				Unit: "tokens", Value: float64(screen.ImageTokens(p.provider, full))}
			for _, format := range []screen.Format{screen.PNG, screen.JPEG} {
				shot, err := d.Capture(ctx, screen.CaptureOptions{Size: size, Format: format})
				if err != nil {
					d.Close(ctx)
					return err
				}
				f := Figure{Section: "tokens", Name: fmt.Sprintf("spotter %s dpr%g %dx%d %s bytes", p.provider, dpr, size.W, size.H, format),
					Unit: "bytes", Value: float64(len(shot.Data))}
				f.against(naiveBytes)
				r.report(f)
			}
			t := Figure{Section: "tokens", Name: fmt.Sprintf("spotter %s dpr%g %dx%d tokens", p.provider, dpr, size.W, size.H),
				Unit: "tokens", Value: float64(screen.ImageTokens(p.provider, size))}
			t.against(naiveTokens)
			t.Note = "estimate from the provider's published formula (screen.ImageTokens)"
			r.report(t)
			r.report(naiveBytes)
			r.report(naiveTokens)
		}
		d.Close(ctx)
	}
	return nil
}
