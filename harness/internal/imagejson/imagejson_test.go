package imagejson_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/internal/imagejson"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// noisyPNG is a PNG of w x h random pixels: its base64 is long and holds
// every character base64 has.
func noisyPNG(t *testing.T, w, h int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCodecsSameBytes checks that every executor codec writes, through
// the stand-ins, the bytes its SDK's encoder writes: the same result with
// the images' sizes left out of their frames takes the encoder's path.
func TestCodecsSameBytes(t *testing.T) {
	shot := &screen.Shot{Data: noisyPNG(t, 64, 40, 1), Frame: screen.Frame{ID: "f0002", Format: screen.PNG, Sent: screen.Size{W: 64, H: 40}}}
	zoom := &screen.Shot{Data: noisyPNG(t, 32, 20, 2), Frame: screen.Frame{ID: "f0003", Format: screen.PNG, Sent: screen.Size{W: 32, H: 20}}}
	standInText := base64.StdEncoding.EncodeToString(append([]byte("\x00spotter image stand-in 0\x00"), make([]byte, 22)...))
	click := []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(5, 5)}}
	codecs := []struct {
		name   string
		call   harness.Call
		encode func(harness.Call, harness.Result) (json.RawMessage, error)
	}{
		{"anthropic", harness.Call{ID: "toolu_1", Name: "computer", Actions: click}, anthropic.EncodeResult},
		{"openai computer_call", harness.Call{ID: "call_1", Actions: click,
			Raw: json.RawMessage(`{"type":"computer_call","call_id":"call_1","action":{"type":"click","x":5,"y":5}}`)}, openai.EncodeResult},
		{"openai function_call", harness.Call{ID: "call_2", Name: "navigate", Actions: click,
			Raw: json.RawMessage(`{"type":"function_call","call_id":"call_2","name":"navigate","arguments":"{}"}`)}, openai.EncodeResult},
		{"gemini", harness.Call{ID: "g1", Name: "click_at", Actions: click,
			Raw: json.RawMessage(`{"id":"g1","name":"click_at","args":{"x":5,"y":5}}`)}, gemini.EncodeResult},
	}
	results := []struct {
		name string
		r    harness.Result
	}{
		{"shot", harness.Result{Ran: 1, Shot: shot}},
		{"shot and notes", harness.Result{Ran: 1, Shot: shot, Notes: []string{"a tab opened <b> & \u2028", "x"}}},
		{"shot and zoom", harness.Result{Ran: 1, Shot: shot, Zoom: zoom}},
		{"error", harness.Result{Ran: 0, Shot: shot, Err: errors.New("action 0 (click): refused")}},
		{"a note holding a stand-in's text", harness.Result{Ran: 1, Shot: shot, Notes: []string{standInText}}},
	}
	plain := func(s *screen.Shot) *screen.Shot {
		if s == nil {
			return nil
		}
		c := *s
		c.Frame.Sent = screen.Size{}
		return &c
	}
	for _, c := range codecs {
		for _, res := range results {
			r := res.r
			r.CallID = c.call.ID
			got, gerr := c.encode(c.call, r)
			r.Shot, r.Zoom = plain(r.Shot), plain(r.Zoom)
			want, werr := c.encode(c.call, r)
			if (gerr != nil) != (werr != nil) {
				t.Fatalf("%s, %s: errors %v and %v", c.name, res.name, gerr, werr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %s: through the stand-ins\n%.400s\nthrough the encoder\n%.400s", c.name, res.name, got, want)
			}
			// Some codecs send the zoom image instead of the screenshot.
			holds := func(s *screen.Shot) bool {
				return bytes.Contains(got, []byte(base64.StdEncoding.EncodeToString(s.Data)))
			}
			if gerr == nil && res.r.Err == nil && !holds(shot) && !holds(zoom) {
				t.Errorf("%s, %s: the result holds no image", c.name, res.name)
			}
		}
	}
}

// TestMarshal checks the splice itself: images written in either order,
// and a result without images or with an image written twice marshalled
// as it is.
func TestMarshal(t *testing.T) {
	a, b := []byte("first image"), []byte("second, longer image bytes")
	r := harness.Result{Shot: &screen.Shot{Data: a, Frame: screen.Frame{Sent: screen.Size{W: 1, H: 1}}},
		Zoom: &screen.Shot{Data: b, Frame: screen.Frame{Sent: screen.Size{W: 1, H: 1}}}}
	// json.Marshal writes a map's keys in order: the zoom comes first
	// with "a", last with "z"; the splice must not assume either.
	for _, zoomKey := range []string{"a", "z"} {
		calls := 0
		marshal := func(r harness.Result) ([]byte, error) {
			calls++
			return json.Marshal(map[string]any{zoomKey: r.Zoom.Data, "s": "data:x;base64," + base64.StdEncoding.EncodeToString(r.Shot.Data)})
		}
		got, err := imagejson.Marshal(r, marshal)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{zoomKey: b, "s": "data:x;base64," + base64.StdEncoding.EncodeToString(a)})
		if !bytes.Equal(got, want) || calls != 1 {
			t.Errorf("Marshal (zoom under %q) = %s (%d calls of marshal), want %s (1)", zoomKey, got, calls, want)
		}
	}
	none := harness.Result{Notes: []string{"no screenshot"}}
	got, err := imagejson.Marshal(none, func(r harness.Result) ([]byte, error) { return json.Marshal(r.Notes) })
	if err != nil || string(got) != `["no screenshot"]` {
		t.Errorf("Marshal(a result without images) = %s, %v", got, err)
	}
	twice := func(r harness.Result) ([]byte, error) {
		return json.Marshal([]any{r.Shot.Data, r.Shot.Data, r.Zoom.Data})
	}
	got, err = imagejson.Marshal(r, twice)
	want, _ := json.Marshal([]any{a, a, b})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Marshal(an image written twice) = %s, %v; want %s", got, err, want)
	}
	fail := errors.New("no")
	if _, err := imagejson.Marshal(r, func(harness.Result) ([]byte, error) { return nil, fail }); !errors.Is(err, fail) {
		t.Errorf("Marshal(a failing marshal) = %v, want %v", err, fail)
	}
}
