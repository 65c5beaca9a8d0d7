package screen

import (
	"errors"
	"math"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

func TestClampRegion(t *testing.T) {
	vp := Size{W: 1280, H: 800}
	rect := func(x0, y0, x1, y1 float64) actions.Rect {
		return actions.Rect{Min: actions.Pt(x0, y0), Max: actions.Pt(x1, y1)}
	}
	tests := []struct {
		name    string
		in      actions.Rect
		want    actions.Rect
		wantErr bool
	}{
		{"empty is the viewport", actions.Rect{}, rect(0, 0, 1280, 800), false},
		{"inside", rect(10, 20, 330, 220), rect(10, 20, 330, 220), false},
		{"fractional", rect(10.5, 20.25, 11.5, 21.25), rect(10.5, 20.25, 11.5, 21.25), false},
		{"the whole viewport", rect(0, 0, 1280, 800), rect(0, 0, 1280, 800), false},
		{"over the top left", rect(-50, -10, 100, 100), rect(0, 0, 100, 100), false},
		{"over the bottom right", rect(1200, 700, 1400, 900), rect(1200, 700, 1280, 800), false},
		{"larger than the viewport", rect(-1, -1, 5000, 5000), rect(0, 0, 1280, 800), false},
		{"one pixel left inside", rect(1279, 799, 1300, 900), rect(1279, 799, 1280, 800), false},
		{"less than a pixel inside", rect(1279.5, 0, 1300, 10), actions.Rect{}, true},
		{"wholly outside", rect(2000, 0, 2100, 100), actions.Rect{}, true},
		{"left of the viewport", rect(-100, 0, -10, 100), actions.Rect{}, true},
		{"inverted", rect(300, 300, 100, 100), actions.Rect{}, true},
		{"zero width", rect(100, 100, 100, 200), actions.Rect{}, true},
		{"NaN", rect(math.NaN(), 0, 10, 10), actions.Rect{}, true},
		{"infinite", rect(0, 0, math.Inf(1), 10), actions.Rect{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClampRegion(tt.in, vp)
			switch {
			case tt.wantErr && !errors.Is(err, actions.ErrInvalid):
				t.Errorf("ClampRegion(%v, %v) = %v, %v; want an error wrapping ErrInvalid", tt.in, vp, got, err)
			case !tt.wantErr && (err != nil || got != tt.want):
				t.Errorf("ClampRegion(%v, %v) = %v, %v; want %v", tt.in, vp, got, err, tt.want)
			}
		})
	}
}

func TestZoomChord(t *testing.T) {
	tests := []struct {
		keys actions.Chord
		cur  float64
		want float64
		ok   bool
	}{
		{actions.Chord{actions.Control, "+"}, 1, 1.1, true},
		{actions.Chord{actions.Control, "="}, 1.25, 1.5, true},
		{actions.Chord{actions.Control, actions.Shift, "="}, 1.1, 1.25, true},
		{actions.Chord{actions.Meta, "NumpadAdd"}, 1, 1.1, true},
		{actions.Chord{actions.Control, "-"}, 1, 0.9, true},
		{actions.Chord{actions.Control, "0"}, 2.5, 1, true},
		{actions.Chord{actions.Control, "+"}, 5, 5, true},
		{actions.Chord{actions.Control, "-"}, 0.25, 0.25, true},
		{actions.Chord{"+"}, 1, 0, false},
		{actions.Chord{actions.Alt, "+"}, 1, 0, false},
		{actions.Chord{actions.Control, "a"}, 1, 0, false},
	}
	for _, tt := range tests {
		got, ok := ZoomChord(tt.keys, tt.cur)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ZoomChord(%v, %g) = %g, %v; want %g, %v", tt.keys, tt.cur, got, ok, tt.want, tt.ok)
		}
	}
}
