package cdp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/screen"
)

// TestPool opens displays on a pool of two browsers: they alternate
// between the browsers, and each captures its own page.
func TestPool(t *testing.T) {
	integration(t)
	ctx := t.Context()
	p, err := LaunchPool(ctx, Config{Logger: testLogger(), Mode: testMode(t)}, 2)
	if err != nil {
		t.Fatalf("LaunchPool() = %v", err)
	}
	defer p.Close(context.Background())
	if p.Len() != 2 {
		t.Errorf("Len() = %d, want 2", p.Len())
	}
	var ds []*Display
	for range 4 {
		d, err := p.NewDisplay(ctx, DisplayConfig{Viewport: screen.Size{W: 640, H: 400}})
		if err != nil {
			t.Fatalf("NewDisplay() = %v", err)
		}
		ds = append(ds, d)
	}
	if ds[0].browser != ds[2].browser || ds[0].browser == ds[1].browser || ds[1].browser != ds[3].browser {
		t.Errorf("displays 0-3 are not on the two browsers in turn")
	}
	for i, d := range ds {
		shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}, Format: screen.PNG})
		if err != nil || len(shot.Data) == 0 {
			t.Errorf("display %d: Capture() = %d bytes, %v", i, len(shot.Data), err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if _, err := p.NewDisplay(ctx, DisplayConfig{}); err == nil {
		t.Errorf("NewDisplay() after Close = nil error")
	}
}

// TestPoolRelaunch kills the browser of a pool of one: the display on it
// is gone, and the next NewDisplay launches a new browser and opens a
// display that works.
func TestPoolRelaunch(t *testing.T) {
	integration(t)
	ctx := t.Context()
	p, err := LaunchPool(ctx, Config{Logger: testLogger(), Mode: testMode(t), CommandTimeout: 5 * time.Second}, 1)
	if err != nil {
		t.Fatalf("LaunchPool() = %v", err)
	}
	defer p.Close(context.Background())
	d, err := p.NewDisplay(ctx, DisplayConfig{})
	if err != nil {
		t.Fatalf("NewDisplay() = %v", err)
	}
	old := p.browsers[0]
	if err := d.browser.Process().Kill(); err != nil {
		t.Fatalf("kill the browser: %v", err)
	}
	if _, err := d.Capture(ctx, screen.CaptureOptions{}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Capture() on the killed browser = %v, want ErrGone", err)
	}
	d2, err := p.NewDisplay(ctx, DisplayConfig{})
	if err != nil {
		t.Fatalf("NewDisplay() after the browser was killed = %v", err)
	}
	defer d2.Close(context.Background())
	if p.browsers[0] == old {
		t.Errorf("the pool still holds the killed browser")
	}
	load(t, d2, "static.html")
	if shot := capture(t, d2, screen.CaptureOptions{Format: screen.PNG}); len(shot.Data) == 0 {
		t.Errorf("the new display's capture is empty")
	}
	d.Close(context.Background())
}
