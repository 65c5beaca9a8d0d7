package playwright

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func TestOpenWithoutDriver(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(t.Context(), Config{DriverDir: dir})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open(DriverDir: empty directory) = %v, want ErrNoDriver", err)
	}
	if want := filepath.Join(dir, "package/cli.js"); !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("Open(DriverDir: empty directory) = %q, want it to name %s", err, want)
	}
}

func TestConfigDefaults(t *testing.T) {
	got, err := Config{DriverDir: "/d"}.withDefaults()
	if err != nil {
		t.Fatalf("Config{}.withDefaults() = %v", err)
	}
	want := Config{Viewport: DefaultViewport, DPR: 1, Exec: DefaultExec, DriverDir: "/d",
		SettleTimeout: DefaultSettleTimeout, QuietWindow: DefaultQuietWindow, CommandTimeout: DefaultCommandTimeout}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Logger" }, cmp.Ignore())); diff != "" {
		t.Errorf("Config{}.withDefaults() (-want +got):\n%s", diff)
	}
	for _, bad := range []Config{
		{Viewport: screen.Size{W: 20000, H: 10}},
		{DPR: -1},
		{DPR: 9},
		{SettleTimeout: -1},
	} {
		bad.DriverDir = "/d"
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("Config%+v.withDefaults() = nil error, want one", bad)
		}
	}
}

func TestCaptureRequest(t *testing.T) {
	vp := screen.Size{W: 1280, H: 800}
	region := actions.Rect{Min: actions.Pt(100, 50), Max: actions.Pt(300, 200)}
	tests := []struct {
		name   string
		dpr    float64
		o      screen.CaptureOptions
		clip   actions.Rect
		size   screen.Size
		device bool
		native screen.Size
	}{
		{"viewport", 1, screen.CaptureOptions{}, full(vp), vp, false, vp},
		{"viewport dpr2", 2, screen.CaptureOptions{}, full(vp), vp, false, vp},
		{"downscaled dpr2", 2, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}}, full(vp), screen.Size{W: 1024, H: 640}, false, vp},
		{"zoom css", 2, screen.CaptureOptions{Region: region}, region, screen.Size{W: 200, H: 150}, false, screen.Size{W: 200, H: 150}},
		{"zoom device", 2, screen.CaptureOptions{Region: region, Size: screen.Size{W: 400, H: 300}}, region, screen.Size{W: 400, H: 300}, true, screen.Size{W: 400, H: 300}},
		{"zoom enlarged dpr1", 1, screen.CaptureOptions{Region: region, Size: screen.Size{W: 800, H: 600}}, region, screen.Size{W: 800, H: 600}, false, screen.Size{W: 200, H: 150}},
		{"region clamped", 1, screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(-10, 700), Max: actions.Pt(100, 900)}},
			actions.Rect{Min: actions.Pt(0, 700), Max: actions.Pt(100, 800)}, screen.Size{W: 100, H: 100}, false, screen.Size{W: 100, H: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Display{cfg: DisplayConfig{Viewport: vp, DPR: tt.dpr}}
			r, err := d.captureRequest(tt.o)
			if err != nil {
				t.Fatalf("captureRequest(%+v) = %v", tt.o, err)
			}
			if r.clip != tt.clip || r.size != tt.size || r.device != tt.device || r.native != tt.native {
				t.Errorf("captureRequest(%+v) = clip %v size %v device %v native %v, want %v %v %v %v",
					tt.o, r.clip, r.size, r.device, r.native, tt.clip, tt.size, tt.device, tt.native)
			}
		})
	}
	for _, o := range []screen.CaptureOptions{
		{Format: "gif"},
		{Quality: 101},
		{Size: screen.Size{W: -1, H: 5}},
		{Size: screen.Size{W: 20000, H: 5}},
		{Region: actions.Rect{Min: actions.Pt(2000, 0), Max: actions.Pt(2100, 10)}},
	} {
		d := &Display{cfg: DisplayConfig{Viewport: vp, DPR: 1}}
		if _, err := d.captureRequest(o); !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("captureRequest(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

func full(s screen.Size) actions.Rect {
	return actions.Rect{Max: actions.Pt(float64(s.W), float64(s.H))}
}

// TestFit checks the resizing and re-encoding of Playwright's image: two
// halves, red and blue, stay where they are.
func TestFit(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := range 100 {
		for x := range 200 {
			c := color.RGBA{255, 0, 0, 255}
			if x >= 100 {
				c = color.RGBA{0, 0, 255, 255}
			}
			src.Set(x, y, c)
		}
	}
	var pngData, jpegData bytes.Buffer
	if err := png.Encode(&pngData, src); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegData, src, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		in     []byte
		size   screen.Size
		format screen.Format
		same   bool // passes unchanged
	}{
		{"as is", pngData.Bytes(), screen.Size{W: 200, H: 100}, screen.PNG, true},
		{"jpeg as is", jpegData.Bytes(), screen.Size{W: 200, H: 100}, screen.JPEG, true},
		{"smaller", pngData.Bytes(), screen.Size{W: 160, H: 80}, screen.PNG, false},
		{"larger jpeg", jpegData.Bytes(), screen.Size{W: 400, H: 200}, screen.JPEG, false},
		{"png to jpeg", pngData.Bytes(), screen.Size{W: 200, H: 100}, screen.JPEG, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := captureReq{size: tt.size, format: tt.format, quality: 90}
			out, err := r.fit(tt.in)
			if err != nil {
				t.Fatalf("fit(%s) = %v", tt.name, err)
			}
			if same := bytes.Equal(out, tt.in); same != tt.same {
				t.Errorf("fit(%s) passed the image unchanged: %v, want %v", tt.name, same, tt.same)
			}
			format, size, err := imageSize(out)
			if err != nil || format != tt.format || size != tt.size {
				t.Fatalf("fit(%s) = a %v %s (%v), want a %v %s", tt.name, size, format, err, tt.size, tt.format)
			}
			img, _, err := image.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("decode fit(%s): %v", tt.name, err)
			}
			for _, p := range []struct {
				x, y int
				red  bool
			}{{tt.size.W / 4, tt.size.H / 2, true}, {tt.size.W * 3 / 4, tt.size.H / 2, false}} {
				r, _, b, _ := img.At(p.x, p.y).RGBA()
				if red := r>>8 > 200 && b>>8 < 50; red != p.red {
					t.Errorf("fit(%s): pixel (%d,%d) = %v, want red %v", tt.name, p.x, p.y, img.At(p.x, p.y), p.red)
				}
			}
		})
	}
	if _, err := (captureReq{size: screen.Size{W: 1, H: 1}, format: screen.PNG}).fit([]byte("GIF89a")); err == nil {
		t.Errorf("fit(a GIF) = nil error, want one")
	}
}

func TestPlaywrightKey(t *testing.T) {
	tests := []struct {
		key  actions.Key
		name string
		err  error
	}{
		{actions.Control, "ControlLeft", nil},
		{"a", "KeyA", nil},
		{"A", "KeyA", nil},
		{"!", "Digit1", nil},
		{"Space", "Space", nil},
		{"Enter", "Enter", nil},
		{"F12", "F12", nil},
		{"F13", "", screen.ErrUnsupported},
		{"Numpad5", "", screen.ErrUnsupported},
		{"NumpadAdd", "", screen.ErrUnsupported},
		{"MediaPlayPause", "", screen.ErrUnsupported},
		{"ctrl", "", actions.ErrInvalid},
	}
	for _, tt := range tests {
		_, name, err := playwrightKey(tt.key)
		if name != tt.name || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("playwrightKey(%q) = %q, %v; want %q, %v", tt.key, name, err, tt.name, tt.err)
		}
	}
}

// Actions that need no browser to be refused are refused before any.
func TestPlanRefuses(t *testing.T) {
	d := &Display{}
	tests := []struct {
		a   actions.Action
		err error
	}{
		{actions.Action{Kind: actions.Screenshot}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.Wait}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.Zoom}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.CursorPosition}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.Click, Button: actions.Back}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.Click, Button: 9}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Click, Modifiers: actions.Chord{"a"}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"a", actions.Shift}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"F20"}}, screen.ErrUnsupported},
		{actions.Action{Kind: actions.Navigate}, actions.ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := d.plan(tt.a); !errors.Is(err, tt.err) {
			t.Errorf("plan(%v) = %v, want %v", tt.a.LogValue(), err, tt.err)
		}
	}
}

func TestClosedDisplay(t *testing.T) {
	d := newDisplayValue(DisplayConfig{}, &Browser{})
	close(d.closed)
	err := d.run(context.Background(), 0, func(context.Context) error { return nil })
	if !errors.Is(err, screen.ErrGone) {
		t.Errorf("run() on a closed display = %v, want ErrGone", err)
	}
}
