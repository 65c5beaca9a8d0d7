package vnc_test

import (
	"context"
	"image"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// benchDesktop starts a 1280x800 desktop with Openbox and an xterm showing
// text, for the capture benchmarks.
func benchDesktop(b *testing.B) *desktop.Desktop {
	d := startDesktop(b, desktop.Config{
		Size: screen.Size{W: 1280, H: 800},
		Apps: []desktop.App{desktop.XTerm("-geometry", "60x20+40+40", "-e", "sh", "-c", "ls -l /usr/bin | head -40; sleep 3600")},
	})
	waitWindow(b, d, "xterm")
	xrun(b, d, "xsetroot", "-solid", "#336699")
	return d
}

// BenchmarkCapture measures captures of a 1280x800 desktop:
//
//   - unchanged: the screen has not changed since the previous capture;
//   - unchanged/fit: the same, scaled to 1024x640 and encoded anew each time
//     (the size alternates between two, so no capture is reused);
//   - click: a click that changes the screen (it opens Openbox's root menu,
//     or closes it), then a capture that waits for the change to arrive and
//     settle. damage-* is the time from the click to the first update.
func BenchmarkCapture(b *testing.B) {
	d := benchDesktop(b)
	v := dial(b, d, vnc.Config{})
	ctx := context.Background()
	captureUntil(b, v, "the root colour xsetroot set", func(img image.Image) bool {
		return rgb(img.At(1270, 790)) == "#336699"
	})

	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, err := v.Capture(ctx, screen.CaptureOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unchanged/fit", func(b *testing.B) {
		sizes := []screen.Size{{W: 1024, H: 640}, {W: 1023, H: 640}}
		i := 0
		for b.Loop() {
			i++
			if _, err := v.Capture(ctx, screen.CaptureOptions{Size: sizes[i%2]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, format := range []screen.Format{screen.PNG, screen.JPEG} {
		b.Run("click/"+string(format), func(b *testing.B) {
			var damage, total []time.Duration
			i := 0
			for b.Loop() {
				i++
				// Right-click the root window to open Openbox's menu, then
				// left-click the root window far from the menu to close it.
				click := actions.Action{Kind: actions.Click, At: actions.Pt(1200, 750), HasAt: true}
				if i%2 == 1 {
					click = actions.Action{Kind: actions.Click, At: actions.Pt(900, 300), HasAt: true, Button: actions.Right}
				}
				n, _ := vnc.Damage(v)
				start := time.Now()
				if err := v.Perform(ctx, screen.Mapped{Action: click}); err != nil {
					b.Fatal(err)
				}
				shot, err := v.Capture(ctx, screen.CaptureOptions{Format: format})
				if err != nil {
					b.Fatal(err)
				}
				total = append(total, time.Since(start))
				if m, at := vnc.Damage(v); m > n {
					damage = append(damage, at.Sub(start))
				}
				if shot.Frame.Settle.TimedOut {
					b.Fatalf("capture after a click: %s", shot.Frame.Settle.Reason)
				}
			}
			// On a loaded machine, Openbox may take longer than the
			// reaction time to draw its menu: such a capture comes too
			// early and sees no change.
			b.ReportMetric(float64(len(total)-len(damage)), "unseen-clicks")
			b.ReportMetric(quantile(damage, 0.5), "damage-p50-ms")
			b.ReportMetric(quantile(damage, 0.9), "damage-p90-ms")
			b.ReportMetric(quantile(damage, 1), "damage-max-ms")
			b.ReportMetric(quantile(total, 0.5), "click+capture-p50-ms")
			b.ReportMetric(quantile(total, 0.9), "click+capture-p90-ms")
		})
	}
}

// BenchmarkFullUpdate measures asking for the whole 1280x800 screen and
// decoding it, in each encoding, over the desktop's unix socket. The
// screen shows Chromium's new-tab page and an xterm of text.
func BenchmarkFullUpdate(b *testing.B) {
	d := startDesktop(b, desktop.Config{
		Size: screen.Size{W: 1280, H: 800},
		Apps: []desktop.App{
			desktop.Chromium("about:blank"),
			desktop.XTerm("-geometry", "100x30+40+300", "-e", "sh", "-c", "ls -l /usr/bin | head -40; sleep 3600"),
		},
	})
	waitWindow(b, d, "xterm")
	waitWindow(b, d, "chromium")
	for _, encs := range [][]vnc.Encoding{{vnc.Raw}, {vnc.ZRLE}} {
		b.Run(encs[0].String(), func(b *testing.B) {
			v := dial(b, d, vnc.Config{Encodings: encs})
			for b.Loop() {
				if err := vnc.FullUpdate(b.Context(), v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// quantile returns the q-quantile of ds in milliseconds (nearest rank, see
// internal/stats).
func quantile(ds []time.Duration, q float64) float64 {
	return stats.Millis(stats.Percentile(ds, 100*q))
}
