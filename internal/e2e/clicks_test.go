package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// target mirrors testdata/targets.html: a 6x6 CSS px square of one colour.
type target struct {
	id      string
	x, y    int // CSS top-left
	r, g, b uint8
}

var targets = []target{
	{"t0", 2, 2, 0xff, 0, 0}, {"t1", 1272, 2, 0, 0xc0, 0}, {"t2", 2, 792, 0, 0, 0xff},
	{"t3", 1272, 792, 0xff, 0, 0xff}, {"t4", 637, 397, 0, 0xc0, 0xc0}, {"t5", 101, 603, 0xc0, 0xc0, 0},
	{"t6", 913, 211, 0xff, 0x80, 0}, {"t7", 333, 149, 0x80, 0, 0xff}, {"t8", 700, 430, 0, 0x80, 0x80},
	{"t9", 720, 412, 0x80, 0, 0},
}

// hit is a press the page reported.
type hit struct {
	ID string  `json:"id"`
	X  float64 `json:"x"`
	Y  float64 `json:"y"`
}

// hitLog is the test server's record of presses.
type hitLog struct {
	mu   sync.Mutex
	hits []hit
}

func (l *hitLog) handler(w http.ResponseWriter, r *http.Request) {
	var h hit
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.hits = append(l.hits, h)
	l.mu.Unlock()
}

func (l *hitLog) all() []hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.hits)
}

// findTargets returns, for every target visible in the encoded image, the
// image pixel nearest the centroid of the pixels of its colour. It looks only
// at pixels: it knows nothing of how the image was scaled.
func findTargets(t *testing.T, data []byte) map[string]actions.Point {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	type acc struct{ sx, sy, n float64 }
	sums := map[string]*acc{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for _, tg := range targets {
				if near(r>>8, tg.r) && near(g>>8, tg.g) && near(bl>>8, tg.b) {
					a := sums[tg.id]
					if a == nil {
						a = &acc{}
						sums[tg.id] = a
					}
					a.sx, a.sy, a.n = a.sx+float64(x), a.sy+float64(y), a.n+1
				}
			}
		}
	}
	out := map[string]actions.Point{}
	for id, a := range sums {
		out[id] = actions.Pt(float64(int(a.sx/a.n)), float64(int(a.sy/a.n)))
	}
	return out
}

func near(v uint32, want uint8) bool {
	d := int(v) - int(want)
	return d > -24 && d < 24
}

// aimModel clicks every target it can see in the screenshot it is sent. With
// zoom set, it first asks for a zoom of that region (in image pixels) and
// then clicks the targets it sees in the zoom image, in the zoom image's own
// coordinates.
type aimModel struct {
	t      *testing.T
	zoom   *actions.Rect
	turn   int
	aimed  map[string]actions.Point // where it clicked, in the space of the image it aimed in
	zoomed *screen.Frame
}

func (m *aimModel) Next(_ context.Context, in harness.Input) (harness.Turn, error) {
	m.turn++
	click := func(found map[string]actions.Point) []actions.Action {
		ids := make([]string, 0, len(found))
		for id := range found {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var as []actions.Action
		for _, id := range ids {
			as = append(as, actions.Action{Kind: actions.Click, HasAt: true, At: found[id]})
		}
		m.aimed = found
		return as
	}
	switch {
	case m.turn == 1 && m.zoom == nil:
		return harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c1", Name: "computer",
			Actions: click(findTargets(m.t, in.Shot.Data))}}}, nil
	case m.turn == 1:
		return harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c1", Name: "computer",
			Actions: []actions.Action{{Kind: actions.Zoom, Region: *m.zoom}}}}}, nil
	case m.turn == 2 && m.zoom != nil:
		r := in.Results[0]
		if r.Err != nil || r.Zoom == nil {
			return harness.Turn{}, fmt.Errorf("zoom failed: %v", r.Err)
		}
		m.zoomed = &r.Zoom.Frame
		return harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c2", Name: "computer",
			FrameID: r.Zoom.Frame.ID, Actions: click(findTargets(m.t, r.Zoom.Data))}}}, nil
	}
	for _, r := range in.Results {
		if r.Err != nil {
			return harness.Turn{}, fmt.Errorf("call %s failed: %v", r.CallID, r.Err)
		}
	}
	return harness.Turn{Stop: harness.StopEndTurn}, nil
}

// TestClicksLandWhereTheModelMeant drives the loop on a real Chromium. The
// model finds small coloured targets in the image it was sent and clicks
// their centres in that image's pixels; the page reports which element each
// press reached. Every target the model aimed at must be the one hit.
func TestClicksLandWhereTheModelMeant(t *testing.T) {
	b := browser(t)
	tests := []struct {
		name    string
		dpr     float64
		sent    screen.Size
		zoom    *actions.Rect // in sent-image pixels
		wantIDs []string
	}{
		{name: "dpr1 full size", dpr: 1, sent: screen.Size{W: 1280, H: 800}},
		{name: "dpr1 downscaled 1024x640", dpr: 1, sent: screen.Size{W: 1024, H: 640}},
		{name: "dpr2 full size", dpr: 2, sent: screen.Size{W: 1280, H: 800}},
		{name: "dpr2 downscaled 1024x640", dpr: 2, sent: screen.Size{W: 1024, H: 640}},
		{name: "dpr2 downscaled 1280x800 -> 640x400", dpr: 2, sent: screen.Size{W: 640, H: 400}},
		// CSS 600..760 x 380..460 holds t4, t8 and t9.
		{name: "zoom region", dpr: 2, sent: screen.Size{W: 1024, H: 640},
			zoom: &actions.Rect{Min: actions.Pt(480, 304), Max: actions.Pt(608, 368)}, wantIDs: []string{"t4", "t8", "t9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &hitLog{}
			srv := serve(t, map[string]http.HandlerFunc{"POST /hit": log.handler})
			d, err := b.NewDisplay(t.Context(), cdp.DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: tt.dpr})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close(context.Background()) })
			navigate(t, d, srv.URL+"/targets.html")

			m := &aimModel{t: t, zoom: tt.zoom}
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: allowAll(),
				Capture: screen.CaptureOptions{Size: tt.sent}, MaxSteps: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !out.OK() {
				t.Fatalf("run stop = %s (%s), want end_turn", out.Stop, out.Err)
			}
			want := tt.wantIDs
			if want == nil {
				for _, tg := range targets {
					want = append(want, tg.id)
				}
			}
			if got := sortedKeys(m.aimed); !slices.Equal(got, want) {
				t.Fatalf("the model found targets %v in its image, want %v", got, want)
			}
			hits := log.all()
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("elements hit = %v, want %v (hits %+v; aimed at %v in the image)", got, want, hits, m.aimed)
			}
			for _, h := range hits {
				for _, tg := range targets {
					if tg.id == h.ID && (h.X < float64(tg.x) || h.X >= float64(tg.x+6) || h.Y < float64(tg.y) || h.Y >= float64(tg.y+6)) {
						t.Errorf("press on %s arrived at CSS (%g,%g), outside its box at (%d,%d)+6", h.ID, h.X, h.Y, tg.x, tg.y)
					}
				}
			}
		})
	}
}

func sortedKeys(m map[string]actions.Point) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
