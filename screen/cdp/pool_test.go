package cdp

import (
	"context"
	"testing"

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
