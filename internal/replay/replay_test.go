package replay

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// paintDisplay is a display whose screen is a grey page with a dark box
// that each click moves to the right, so the screen shows how many clicks
// arrived. Variant draws a red banner over the top, as a changed page would.
type paintDisplay struct {
	mu      sync.Mutex
	clicks  int
	seq     int
	Variant bool
	At      []actions.Point // CSS points clicked
}

func (d *paintDisplay) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	vp := screen.Size{W: 800, H: 600}
	size := o.Size
	if size.Empty() {
		size = vp
	}
	img := image.NewRGBA(image.Rect(0, 0, size.W, size.H))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.Gray{0xe0}), image.Point{}, draw.Src)
	box := image.Rect(40+d.clicks*150, 200, 140+d.clicks*150, 300)
	sx, sy := float64(size.W)/float64(vp.W), float64(size.H)/float64(vp.H)
	scaled := image.Rect(int(float64(box.Min.X)*sx), int(float64(box.Min.Y)*sy), int(float64(box.Max.X)*sx), int(float64(box.Max.Y)*sy))
	draw.Draw(img, scaled, image.NewUniform(color.Gray{0x20}), image.Point{}, draw.Src)
	if d.Variant {
		draw.Draw(img, image.Rect(0, 0, size.W, size.H/5), image.NewUniform(color.RGBA{0xc0, 0x20, 0x20, 0xff}), image.Point{}, draw.Src)
	}
	data, err := EncodePNG(img)
	if err != nil {
		return screen.Shot{}, err
	}
	d.seq++
	f := screen.Frame{ID: fmt.Sprintf("f%04d", d.seq), Time: time.Now(), Viewport: vp, DPR: 1,
		Clip: actions.Rect{Max: actions.Pt(800, 600)}, Capture: vp, Sent: size, Format: screen.PNG}
	return screen.Shot{Frame: f, Data: data}, nil
}

func (d *paintDisplay) Perform(ctx context.Context, m screen.Mapped) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.Kind == actions.Click {
		d.clicks++
		d.At = append(d.At, m.At)
	}
	return nil
}

// turns clicks twice, in the 400x300 image's pixels, then ends.
var turns = []script.Turn{
	{Say: "first", Actions: script.Batch(`[{"type":"click","x":50,"y":100}]`)},
	{Say: "second", Actions: script.Batch(`[{"type":"click","x":120,"y":100}]`)},
	{Say: "done"},
}

func run(t *testing.T, m harness.Model, d harness.Display, dir string) harness.Outcome {
	t.Helper()
	tw, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Task: "click twice",
		Policy: actions.Policy{Allow: []actions.Kind{actions.Click}}, Trace: tw,
		Capture: screen.CaptureOptions{Size: screen.Size{W: 400, H: 300}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func record(t *testing.T) (*Recording, string) {
	t.Helper()
	dir := t.TempDir()
	out := run(t, script.New(turns, true), &paintDisplay{}, filepath.Join(dir, "trace"))
	if !out.OK() {
		t.Fatalf("recording run: %+v", out)
	}
	rec, err := Record(filepath.Join(dir, "trace"), filepath.Join(dir, "rec"))
	if err != nil {
		t.Fatalf("Record() error = %v", err)
	}
	return rec, filepath.Join(dir, "rec")
}

func TestRecordAndReplay(t *testing.T) {
	rec, dir := record(t)
	if len(rec.Steps) != 2 || rec.Final != "done" || rec.Image != (screen.Size{W: 400, H: 300}) {
		t.Fatalf("Record() = %+v, want two steps of a 400x300 image ending with done", rec)
	}
	if a := rec.Steps[1].Calls[0][0]; a.Kind != actions.Click || a.At != actions.Pt(120, 100) {
		t.Errorf("step 2 = %+v, want a click at (120,100)", a)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := &paintDisplay{}
	m, err := New(Config{Recording: loaded, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, m, d, filepath.Join(t.TempDir(), "replay"))
	if !out.OK() || len(m.Divergences) != 0 || len(d.At) != 2 {
		t.Fatalf("replay = %+v, divergences %+v, clicks %v; want a clean run of two clicks", out, m.Divergences, d.At)
	}
	// (120,100) of a 400x300 image of an 800x600 viewport is CSS (241,201).
	if d.At[1] != actions.Pt(241, 201) {
		t.Errorf("second click at %v CSS px, want (241,201)", d.At[1])
	}
	for i, s := range m.Scores {
		if s > 0 {
			t.Errorf("step %d scored %v on an identical screen, want 0", i+1, s)
		}
	}
}

func TestReplayDivergesWithDiff(t *testing.T) {
	rec, dir := record(t)
	diffs := t.TempDir()
	m, _ := New(Config{Recording: rec, Dir: dir, DiffDir: diffs})
	d := &paintDisplay{Variant: true}
	out := run(t, m, d, filepath.Join(t.TempDir(), "replay"))
	if out.OK() || !strings.Contains(out.Err, ErrDiverged.Error()) || len(d.At) != 0 {
		t.Fatalf("replay on a changed screen = %+v with clicks %v, want it stopped before any click", out, d.At)
	}
	if len(m.Divergences) != 1 || m.Divergences[0].Step != 1 || m.Divergences[0].Score < 0.1 {
		t.Fatalf("divergences = %+v, want step 1 with a large score", m.Divergences)
	}
	b, err := os.ReadFile(m.Divergences[0].Diff)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Decode(b)
	if err != nil || img.Bounds().Dx() < 3*400 {
		t.Errorf("diff image %v (err %v), want three panels side by side", img.Bounds(), err)
	}
}

func TestReplayHeals(t *testing.T) {
	rec, dir := record(t)
	// The healing model is sent the task and the current screen, and then
	// finds its own way: one click is enough on this page.
	heal := script.New([]script.Turn{{Actions: script.Batch(`[{"type":"click","x":50,"y":100}]`)}, {Say: "healed"}}, true)
	m, _ := New(Config{Recording: rec, Dir: dir, Heal: heal})
	d := &paintDisplay{Variant: true}
	traceDir := filepath.Join(t.TempDir(), "replay")
	out := run(t, m, d, traceDir)
	if !out.OK() || out.Text != "healed" || m.HealedAt != 1 || len(d.At) != 1 {
		t.Fatalf("healed replay = %+v, healed at %d, clicks %v", out, m.HealedAt, d.At)
	}
	if len(heal.Received) == 0 || heal.Received[0].Task != "click twice" || heal.Received[0].Shot == nil {
		t.Errorf("the healing model's first input = %+v, want the task and the screen", heal.Received)
	}
	// The healed run is the new path.
	nrec, err := Record(traceDir, filepath.Join(t.TempDir(), "new"))
	if err != nil || len(nrec.Steps) != 1 || nrec.Final != "healed" {
		t.Errorf("Record(healed run) = %+v, %v; want one step", nrec, err)
	}
}

func TestToImage(t *testing.T) {
	f := screen.Frame{ID: "f1", Viewport: screen.Size{W: 1280, H: 800}, DPR: 1, Clip: actions.Rect{Max: actions.Pt(1280, 800)},
		Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: 1000, H: 625}}
	a := actions.Action{Kind: actions.Scroll, At: actions.Pt(500, 500), HasAt: true, DeltaY: 100}
	got, err := ToImage(a, f, screen.Grid1000)
	if err != nil {
		t.Fatal(err)
	}
	if got.At != actions.Pt(500, 312.5) || got.DeltaY != 62.5 {
		t.Errorf("ToImage(grid) = at %v dy %v, want (500,312.5) and 62.5", got.At, got.DeltaY)
	}
	if _, err := ToImage(actions.Action{Kind: actions.Click, At: actions.Pt(1001, 5), HasAt: true}, f, screen.Grid1000); !errors.Is(err, screen.ErrOutOfBounds) {
		t.Errorf("ToImage(outside) error = %v, want ErrOutOfBounds", err)
	}
}

func TestCompare(t *testing.T) {
	a := image.NewRGBA(image.Rect(0, 0, 200, 100))
	draw.Draw(a, a.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	b := image.NewRGBA(a.Bounds())
	copy(b.Pix, a.Pix)
	if d := Compare(a, b); d.Score != 0 {
		t.Errorf("Compare(same) = %v, want 0", d.Score)
	}
	// A one-pixel speck is noise; a block of a quarter of the image is not.
	b.Set(50, 50, color.Black)
	if d := Compare(a, b); d.Score > DefaultThreshold {
		t.Errorf("Compare(one pixel) = %v, want at most %v", d.Score, DefaultThreshold)
	}
	draw.Draw(b, image.Rect(0, 0, 100, 50), image.NewUniform(color.Black), image.Point{}, draw.Src)
	if d := Compare(a, b); d.Score < 0.2 || d.Score > 0.3 {
		t.Errorf("Compare(quarter) = %v, want about 0.25", d.Score)
	}
	if d := Compare(a, image.NewRGBA(image.Rect(0, 0, 100, 100))); d.Score != 1 {
		t.Errorf("Compare(other aspect) = %v, want 1", d.Score)
	}
	if d := Compare(a, image.NewRGBA(image.Rectangle{})); d.Score != 1 {
		t.Errorf("Compare(empty) = %v, want 1", d.Score)
	}
}

func TestRecordRefusesBadTrace(t *testing.T) {
	if _, err := Record(t.TempDir(), t.TempDir()); err == nil {
		t.Error("Record(empty dir) = nil error, want one")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load(empty dir) = nil error, want one")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New(no recording) = nil error, want one")
	}
}
