package cdp

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

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
