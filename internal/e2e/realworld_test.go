package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// reports collects what the pages of testdata/realworld report (report.js).
type reports struct {
	mu sync.Mutex
	vs []string
}

func (r *reports) handle(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.vs = append(r.vs, req.URL.Query().Get("v"))
	r.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
}

func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vs)
}

// realWorld is one situation of real pages that the loop must handle.
type realWorld struct {
	name  string
	page  string        // under testdata/realworld/
	turns []script.Turn // the model's script
	want  []string      // what the page must report, in order
	// check, when set, looks at the model's inputs (results, notes,
	// screenshots) and the display after the run.
	check func(t *testing.T, in []harness.Input, d *cdp.Display)
}

// turn is one scripted turn of a single call, in screenshot pixels
// (the screenshot is the 1280x800 viewport, so CSS px).
func turn(actions string) script.Turn { return script.Turn{Actions: script.Batch(actions)} }

// TestRealWorld drives real-world pages through the loop with a scripted
// model on a real Chromium, in both display modes: new tabs, JavaScript
// dialogs, native select menus, file choosers, downloads, cross-origin
// iframes, page zoom, hover menus, HTML5 drag and drop and inner scrolling.
// Each page reports what arrived to the test server.
func TestRealWorld(t *testing.T) {
	integration(t)
	upload := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(upload, []byte("quarterly notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []realWorld{
		{
			name: "new tab", page: "tabs.html",
			turns: []script.Turn{
				turn(`[{"type":"click","x":160,"y":70}]`),
				turn(`[{"type":"switch_tab","tab":0}]`),
				turn(`[{"type":"close_tab","tab":1}]`),
			},
			want: []string{"newtab-loaded"},
			check: func(t *testing.T, in []harness.Input, _ *cdp.Display) {
				r := in[1].Results[0]
				if r.Shot == nil || !strings.HasSuffix(r.Shot.Frame.URL, "/newtab.html") || !hasNote(r, "A new tab opened") ||
					!hasNote(r, "[1] the new tab") {
					t.Fatalf("result of the click: notes %q, shot %v", r.Notes, r.Shot != nil)
				}
				// The new tab's page is green all over.
				if c := pixel(t, r.Shot, 640, 600); c != [3]uint8{0, 0xaa, 0} {
					t.Errorf("the screenshot after the click shows %v at (640, 600), want the new tab's green", c)
				}
				if r := in[2].Results[0]; !strings.HasSuffix(r.Shot.Frame.URL, "/tabs.html") || !hasNote(r, "[0] opener") {
					t.Errorf("result of switch_tab 0: URL %s, notes %q", r.Shot.Frame.URL, r.Notes)
				}
				if r := in[3].Results[0]; hasNote(r, "[1]") || !hasNote(r, "[0] opener") {
					t.Errorf("result of close_tab 1: notes %q, want one tab", r.Notes)
				}
			},
		},
		{
			name: "dialogs", page: "dialogs.html",
			turns: []script.Turn{
				turn(`[{"type":"click","x":140,"y":70}]`),
				turn(`[{"type":"dialog","accept":true}]`),
				turn(`[{"type":"click","x":140,"y":170}]`),
				turn(`[{"type":"dialog","accept":true}]`),
				turn(`[{"type":"click","x":140,"y":270}]`),
				turn(`[{"type":"dialog","accept":true,"text":"Ada"}]`),
			},
			want: []string{"alert-closed", "confirm:true", "prompt:Ada"},
			check: func(t *testing.T, in []harness.Input, _ *cdp.Display) {
				for i, want := range []string{`alert dialog ("Saved!") is open`, `confirm dialog ("Delete it?") is open`, `prompt dialog ("Your name?") is open`} {
					if r := in[1+2*i].Results[0]; !hasNote(r, want) {
						t.Errorf("result of click %d: notes %q, want %q", i, r.Notes, want)
					}
				}
			},
		},
		{
			name: "select", page: "select.html",
			turns: []script.Turn{
				turn(`[{"type":"click","x":160,"y":56}]`),
				turn(`[{"type":"click","x":100,"y":132}]`), // the third option, 24 px a row below the select
			},
			want: []string{"chose:blue"},
			check: func(t *testing.T, in []harness.Input, _ *cdp.Display) {
				// The options are drawn in the screenshot below the select.
				if n := darkPixels(t, in[1].Results[0].Shot, image.Rect(40, 76, 280, 170)); n < 100 {
					t.Errorf("the screenshot of the open select has %d dark pixels below it, want its options", n)
				}
			},
		},
		{
			name: "upload", page: "upload.html",
			turns: []script.Turn{
				turn(`[{"type":"click","x":190,"y":60}]`),
				{Actions: script.Batch(`[{"type":"upload","files":["/etc/passwd"]}]`), ExpectError: `upload of "/etc/passwd" is not allowed`},
				turn(fmt.Sprintf(`[{"type":"upload","files":[%q]}]`, upload)),
			},
			want: []string{"uploaded:notes.txt:quarterly notes"},
			check: func(t *testing.T, in []harness.Input, _ *cdp.Display) {
				if r := in[1].Results[0]; !hasNote(r, "A file chooser is open") {
					t.Errorf("result of the click: notes %q, want the file chooser", r.Notes)
				}
			},
		},
		{
			name: "download", page: "download.html",
			turns: []script.Turn{turn(`[{"type":"click","x":160,"y":70}]`), turn(`[{"type":"wait","duration_ms":300}]`)},
			check: func(t *testing.T, in []harness.Input, d *cdp.Display) {
				var notes []string
				for _, x := range in[1:] {
					notes = append(notes, x.Results[0].Notes...)
				}
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "Downloaded report.csv (12 bytes)") }) {
					t.Errorf("notes %q, want the download", notes)
				}
				if b, err := os.ReadFile(filepath.Join(d.DownloadDir(), "report.csv")); err != nil || string(b) != "a,b\n1,2\n3,4\n" {
					t.Errorf("saved report.csv = %q, %v", b, err)
				}
			},
		},
		{
			name: "cross-origin iframe", page: "iframe.html",
			turns: []script.Turn{
				turn(`[{"type":"click","x":225,"y":175}]`),
				turn(`[{"type":"click","x":250,"y":265},{"type":"type","text":"hello"},{"type":"keypress","keys":["TAB"]}]`),
			},
			want: []string{"inner-click:true:localhost", "inner-typed:hello"},
		},
		{
			name: "zoom 150%", page: "zoom.html",
			turns: []script.Turn{
				turn(`[{"type":"keypress","keys":["CTRL","+"]},{"type":"keypress","keys":["CTRL","+"]},{"type":"keypress","keys":["CTRL","+"]}]`),
				turn(`[{"type":"click","x":375,"y":187}]`),
			},
			want: []string{"clicked:a:1.5"},
			check: func(t *testing.T, in []harness.Input, _ *cdp.Display) {
				if f := in[2].Results[0].Shot.Frame; f.Zoom != 1.5 {
					t.Errorf("Frame.Zoom after three ctrl+plus = %g, want 1.5", f.Zoom)
				}
			},
		},
		{
			name: "hover menu", page: "hover.html",
			turns: []script.Turn{
				turn(`[{"type":"move","x":120,"y":60}]`),
				turn(`[{"type":"click","x":120,"y":140}]`),
			},
			want: []string{"menu:gadgets"},
		},
		{
			name: "html5 drop", page: "dnd.html",
			turns: []script.Turn{turn(`[{"type":"drag","path":[{"x":115,"y":115},{"x":300,"y":120},{"x":475,"y":115}]}]`)},
			want:  []string{"dropped:card-7"},
		},
		{
			name: "inner scroll", page: "scroll.html",
			turns: []script.Turn{
				turn(`[{"type":"scroll","x":190,"y":140,"scroll_x":0,"scroll_y":300}]`),
				turn(`[{"type":"click","x":190,"y":166}]`),
			},
			want: []string{"item:8"},
		},
	}

	for _, mode := range []cdp.Mode{cdp.FrameControl, cdp.Screencast} {
		t.Run(mode.String(), func(t *testing.T) {
			if m, err := cdp.ParseMode(os.Getenv("SPOTTER_CDP_MODE")); err == nil && m != cdp.ModeAuto && m != mode {
				t.Skipf("SPOTTER_CDP_MODE=%s", m)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			b, err := cdp.Launch(ctx, cdp.Config{Mode: mode})
			cancel()
			if err != nil {
				t.Fatalf("launch Chromium in %s mode: %v", mode, err)
			}
			t.Cleanup(func() { b.Close(context.Background()) })
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { runRealWorld(t, b, tc, upload) })
			}
		})
	}
}

func runRealWorld(t *testing.T, b *cdp.Browser, tc realWorld, upload string) {
	rep := &reports{}
	srv := serve(t, map[string]http.HandlerFunc{
		"GET /report": rep.handle,
		"GET /download": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/csv")
			w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
			fmt.Fprint(w, "a,b\n1,2\n3,4\n")
		},
	})
	d, err := b.NewDisplay(t.Context(), cdp.DisplayConfig{DownloadDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	navigate(t, d, srv.URL+"/realworld/"+tc.page)

	policy := allowAll()
	policy.Files = []string{upload}
	m := script.New(tc.turns, true)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := harness.Run(ctx, harness.Config{Model: m, Display: d, Policy: policy,
		Capture: screen.CaptureOptions{Size: screen.Size{W: 1280, H: 800}}, MaxSteps: len(tc.turns) + 2})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatalf("run stop = %s (%s), want end_turn", out.Stop, out.Err)
	}
	if len(m.Received) != len(tc.turns)+1 {
		t.Fatalf("the model was called %d times, want %d", len(m.Received), len(tc.turns)+1)
	}
	if got := rep.all(); !slices.Equal(got, tc.want) && (len(tc.want) > 0 || len(got) > 0) {
		t.Errorf("the page reported %q, want %q", got, tc.want)
	}
	if tc.check != nil {
		tc.check(t, m.Received, d)
	}
}

// hasNote reports whether a note of r contains s.
func hasNote(r harness.Result, s string) bool {
	return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, s) })
}

func decodeShot(t *testing.T, s *screen.Shot) image.Image {
	t.Helper()
	if s == nil {
		t.Fatal("no screenshot")
	}
	img, _, err := image.Decode(bytes.NewReader(s.Data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	return img
}

func pixel(t *testing.T, s *screen.Shot, x, y int) [3]uint8 {
	r, g, b, _ := decodeShot(t, s).At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// darkPixels counts the pixels of r darker than mid-grey.
func darkPixels(t *testing.T, s *screen.Shot, r image.Rectangle) int {
	img := decodeShot(t, s)
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if (cr+cg+cb)/3>>8 < 128 {
				n++
			}
		}
	}
	return n
}
