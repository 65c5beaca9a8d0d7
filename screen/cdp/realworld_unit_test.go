package cdp

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

func TestZoomKey(t *testing.T) {
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
		got, ok := zoomKey(tt.keys, tt.cur)
		if got != tt.want || ok != tt.ok {
			t.Errorf("zoomKey(%v, %g) = %g, %v; want %g, %v", tt.keys, tt.cur, got, ok, tt.want, tt.ok)
		}
	}
}

func TestClipParamsZoom(t *testing.T) {
	r := captureReq{clip: actions.Rect{Min: actions.Pt(300, 150), Max: actions.Pt(900, 450)}, scale: 0.5}
	p := clipParams(r, actions.Pt(10, 20), 1.5)
	if c := p.Clip; c.X != 210 || c.Y != 120 || c.Width != 400 || c.Height != 200 || c.Scale != 0.5 {
		t.Errorf("clipParams(%v, scroll (10, 20), zoom 1.5).Clip = %+v, want 210,120 400x200 at 0.5", r.clip, c)
	}
}

func TestMetricsFor(t *testing.T) {
	m := metricsFor(1280, 800, 2, 1.5, 0.8)
	if m.Width != 853 || m.Height != 533 || m.DeviceScaleFactor != 3 || math.Abs(m.Scale-1.2) > 1e-9 {
		t.Errorf("metricsFor(1280x800, dpr 2, zoom 1.5, scale 0.8) = %+v", m)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"report.csv":         "report.csv",
		"../../etc/passwd":   "_.._etc_passwd",
		".bashrc":            "bashrc",
		"":                   "download",
		"a\x00b\nc.txt":      "a_b_c.txt",
		`..\windows\x.exe`:   `_windows_x.exe`,
		"  spaced name.pdf ": "spaced name.pdf",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUniquePath(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []string{"a.txt", "a-2.txt", "a-3.txt"} {
		p, err := uniquePath(dir, "a.txt")
		if err != nil || filepath.Base(p) != want {
			t.Fatalf("uniquePath #%d = %q, %v; want %s", i, p, err, want)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
