package trace

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func parseReport(t *testing.T, path string) *html.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatalf("html.Parse(%s) = %v", path, err)
	}
	return doc
}

func isElem(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == name }
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if match(d) {
			out = append(out, d)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// writeTrace writes evs and the given shots (frame id -> image) to a new
// trace and returns its directory.
func writeTrace(t *testing.T, shots map[string][]byte, evs ...Event) string {
	t.Helper()
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for id, data := range shots {
		if _, err := w.WriteShot(screen.Shot{Frame: screen.Frame{ID: id, Format: screen.PNG}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func imageFrame(id, url string) screen.Frame {
	return screen.Frame{ID: id, URL: url, Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
		Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: demoW, H: demoH}, Format: screen.PNG}
}

func TestReportEscapesHostileText(t *testing.T) {
	const hostile = `</script><img src=x onerror=alert(1)><script>alert(2)</script>"'&`
	const badURL = `javascript:alert(3)//</title><img src=x onerror=alert(4)>`
	img := page(t)
	f1, f2 := imageFrame("f1", badURL), imageFrame("f2", hostile)
	nav := actions.Action{Kind: actions.Navigate, URL: badURL}
	typ := actions.Action{Kind: actions.Type, Text: hostile}
	dir := writeTrace(t, map[string][]byte{"f1": img, "f2": img},
		Event{Type: TypeRunStart, Task: hostile, Model: hostile, Frame: f1, Shot: "shots/f1.png"},
		Event{Type: TypeModelTurn, Step: 1, Text: hostile, Stop: hostile},
		Event{Type: TypeCall, Step: 1, CallID: hostile, Name: hostile, Error: hostile},
		Event{Type: TypeAction, Step: 1, CallID: hostile, Action: nav, Mapped: screen.Mapped{Action: nav}, FrameID: "f1"},
		Event{Type: TypeAction, Step: 1, CallID: hostile, Index: 1, Action: typ, Error: hostile, FrameID: "f1"},
		Event{Type: TypeResult, Step: 1, CallID: hostile, Ran: 1, Error: hostile, Notes: []string{hostile}, Frame: f2, Shot: "shots/f2.png"},
		Event{Type: TypeNote, Step: 1, Text: hostile},
		Event{Type: TypeError, Error: hostile},
		Event{Type: TypeRunEnd, Step: 1, Stop: hostile, Error: hostile},
	)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatalf("WriteReport() = %v", err)
	}
	doc := parseReport(t, path)

	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "script":
			// The one script is the viewer's, as written, with no data.
			if textOf(n) != viewerJS || len(n.Attr) != 0 {
				t.Errorf("report has a <script %v> that is not the viewer's: %.200q", n.Attr, textOf(n))
			}
		case "img", "iframe", "object", "embed":
			t.Errorf("report has a live <%s> element: %v", n.Data, n.Attr)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("<%s> has event handler attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if v := strings.ToLower(strings.TrimSpace(a.Val)); strings.HasPrefix(v, "javascript:") {
				t.Errorf("<%s %s=%q> is a javascript: URL", n.Data, a.Key, a.Val)
			}
		}
	}
	// The hostile text is shown, as text.
	body := textOf(doc)
	for _, want := range []string{hostile, badURL} {
		if !strings.Contains(body, want) {
			t.Errorf("report text does not contain %q", want)
		}
	}
	title := findAll(doc, isElem("title"))
	if len(title) != 1 || textOf(title[0]) != "Spotter run: "+hostile {
		t.Errorf("report <title> = %q, want %q", textOf(title[0]), "Spotter run: "+hostile)
	}
}

func TestReportMarksClickOnTheFrameTheModelSaw(t *testing.T) {
	f1, f2 := imageFrame("f1", "https://a.example/"), imageFrame("f2", "https://b.example/")
	click := actions.Action{Kind: actions.Click, At: actions.Pt(512, 168), HasAt: true}
	mapped := screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(640, 210), HasAt: true}}
	dir := writeTrace(t, map[string][]byte{"f1": page(t), "f2": page(t)},
		Event{Type: TypeRunStart, Task: "t", Frame: f1, Shot: "shots/f1.png"},
		Event{Type: TypeModelTurn, Step: 1, Text: "click"},
		Event{Type: TypeCall, Step: 1, CallID: "c1"},
		Event{Type: TypeAction, Step: 1, CallID: "c1", Action: click, Mapped: mapped, FrameID: "f1"},
		Event{Type: TypeResult, Step: 1, CallID: "c1", Ran: 1, Frame: f2, Shot: "shots/f2.png"},
		Event{Type: TypeRunEnd, Step: 1, Stop: "end_turn"},
	)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatalf("WriteReport() = %v", err)
	}
	doc := parseReport(t, path)

	images := map[string]string{} // defs id -> frame, by the data URI's order
	for i, n := range findAll(doc, isElem("image")) {
		images["#"+attr(n, "id")] = []string{"f1", "f2"}[i]
		if !strings.HasPrefix(attr(n, "href"), "data:image/png;base64,") {
			t.Errorf("<image id=%s> href starts %.30q, want a PNG data URI", attr(n, "id"), attr(n, "href"))
		}
	}
	shots := findAll(doc, func(n *html.Node) bool { return isElem("svg")(n) && attr(n, "class") == "shot" })
	if len(shots) != 2 {
		t.Fatalf("report has %d screenshots, want 2 (before and after)", len(shots))
	}
	type view struct {
		Frame   string
		ViewBox string
		Clicks  []string // cx,cy of each click ring
	}
	var got []view
	for _, s := range shots {
		v := view{ViewBox: attr(s, "viewBox")}
		for _, u := range findAll(s, isElem("use")) {
			v.Frame = images[attr(u, "href")]
		}
		for _, c := range findAll(s, func(n *html.Node) bool { return isElem("circle")(n) && attr(n, "class") == "line" }) {
			v.Clicks = append(v.Clicks, attr(c, "cx")+","+attr(c, "cy"))
		}
		got = append(got, v)
	}
	want := []view{
		{Frame: "f1", ViewBox: "0 0 1024 640", Clicks: []string{"512,168"}},
		{Frame: "f2", ViewBox: "0 0 1024 640"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("screenshots in the report (-want +got):\n%s", diff)
	}
}

func TestMarker(t *testing.T) {
	full := imageFrame("f", "")
	zoomed := full
	zoomed.Clip = actions.Rect{Min: actions.Pt(100, 200), Max: actions.Pt(612, 520)} // 512x320 CSS shown as 1024x640
	pt := actions.Pt
	tests := []struct {
		name   string
		g      geometry
		a      actions.Action
		m      actions.Action
		want   marker // only the compared fields
		wantOK bool
	}{
		{name: "click in image space", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Click, At: pt(512, 168), HasAt: true}, want: marker{Kind: "click", Class: "left", X: 512, Y: 168}, wantOK: true},
		{name: "right click", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Click, At: pt(10, 20), HasAt: true, Button: actions.Right}, want: marker{Kind: "click", Class: "right", X: 10, Y: 20}, wantOK: true},
		{name: "click on a 1000 grid", g: geometry{frame: full, space: screen.Grid1000, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Click, At: pt(500, 250), HasAt: true}, want: marker{Kind: "click", Class: "left", X: 512, Y: 160}, wantOK: true},
		{name: "click in a resized space", g: geometry{frame: full, space: screen.Space{Kind: screen.ResizedSpace, Resized: screen.Size{W: 512, H: 320}}, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Click, At: pt(100, 50), HasAt: true}, want: marker{Kind: "click", Class: "left", X: 200, Y: 100}, wantOK: true},
		{name: "mapped only", g: geometry{frame: full, w: 1024, h: 640},
			m: actions.Action{Kind: actions.Click, At: pt(640, 210), HasAt: true}, want: marker{Kind: "click", Class: "left", X: 512, Y: 168}, wantOK: true},
		{name: "mapped only on a zoomed frame", g: geometry{frame: zoomed, w: 1024, h: 640},
			m: actions.Action{Kind: actions.Move, At: pt(356, 360), HasAt: true}, want: marker{Kind: "point", Class: "point", X: 512, Y: 320}, wantOK: true},
		{name: "mapped only without geometry", g: geometry{w: 1024, h: 640},
			m: actions.Action{Kind: actions.Click, At: pt(640, 210), HasAt: true}},
		{name: "click at the cursor", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Click}},
		{name: "type has no place", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Type, Text: "x"}},
		{name: "scroll down", g: geometry{frame: full, w: 1024, h: 640},
			a:    actions.Action{Kind: actions.Scroll, At: pt(512, 400), HasAt: true, DeltaY: 100},
			want: marker{Kind: "scroll", Class: "scroll", X: 512, Y: 400, X2: 512, Y2: 500}, wantOK: true},
		{name: "scroll far left", g: geometry{frame: full, w: 1024, h: 640},
			a:    actions.Action{Kind: actions.Scroll, At: pt(512, 400), HasAt: true, DeltaX: -5000},
			want: marker{Kind: "scroll", Class: "scroll", X: 512, Y: 400, X2: 512 - 1024.0/6, Y2: 400}, wantOK: true},
		{name: "scroll without distance", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Scroll, At: pt(5, 6), HasAt: true}, want: marker{Kind: "point", Class: "point", X: 5, Y: 6}, wantOK: true},
		{name: "drag", g: geometry{frame: full, w: 1024, h: 640},
			a:    actions.Action{Kind: actions.Drag, Path: []actions.Point{pt(10, 20), pt(30, 40), pt(50, 60)}},
			want: marker{Kind: "drag", Class: "drag", X: 10, Y: 20, X2: 50, Y2: 60, Points: "10,20 30,40 50,60"}, wantOK: true},
		{name: "drag of one point", g: geometry{frame: full, w: 1024, h: 640},
			a: actions.Action{Kind: actions.Drag, Path: []actions.Point{pt(10, 20)}}},
		{name: "zoom region", g: geometry{frame: full, w: 1024, h: 640},
			a:    actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: pt(100, 100), Max: pt(300, 200)}},
			want: marker{Kind: "region", Class: "region", X: 100, Y: 100, RW: 200, RH: 100}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.g.marker(1, tt.a, screen.Mapped{Action: tt.m})
			if ok != tt.wantOK {
				t.Fatalf("marker(%+v, mapped %+v) ok = %v, want %v", tt.a, tt.m, ok, tt.wantOK)
			}
			if !ok {
				return
			}
			round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
			gotCmp := marker{Kind: got.Kind, Class: got.Class, X: round(got.X), Y: round(got.Y), X2: round(got.X2), Y2: round(got.Y2),
				RW: round(got.RW), RH: round(got.RH), Points: got.Points}
			tt.want.X2, tt.want.Y2 = round(tt.want.X2), round(tt.want.Y2)
			if diff := cmp.Diff(tt.want, gotCmp); diff != "" {
				t.Errorf("marker(%+v, mapped %+v) (-want +got):\n%s", tt.a, tt.m, diff)
			}
			if got.N != 1 || got.R <= 0 || got.Font <= 0 {
				t.Errorf("marker(%+v) = N %d, R %v, Font %v; want N 1 and a positive size", tt.a, got.N, got.R, got.Font)
			}
		})
	}
}

func TestReportTruncatedTrace(t *testing.T) {
	dir := writeTrace(t, nil,
		Event{Type: TypeRunStart, Task: "t"},
		Event{Type: TypeModelTurn, Step: 1, Text: "thinking"},
	)
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"type":"call","step":1,"call_id":"c`)
	f.Close()
	if _, err := Read(dir); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read() = %v, want ErrTruncated", err)
	}
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatalf("WriteReport() of a truncated trace = %v, want nil", err)
	}
	text := textOf(parseReport(t, path))
	for _, want := range []string{"unfinished event", "no run_end", "incomplete", "thinking"} {
		if !strings.Contains(text, want) {
			t.Errorf("report of a truncated trace does not say %q", want)
		}
	}
}

func TestReportMissingAndForeignShots(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(secret, page(t), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeTrace(t, map[string][]byte{"f3": []byte("<svg onload=alert(1)>")},
		Event{Type: TypeRunStart, Frame: screen.Frame{ID: "f1"}, Shot: "shots/f1.png"},
		Event{Type: TypeModelTurn, Step: 1},
		Event{Type: TypeResult, Step: 1, CallID: "a", Frame: screen.Frame{ID: "f2"}, Shot: "../../../../../../.." + secret},
		Event{Type: TypeResult, Step: 1, CallID: "b", Frame: screen.Frame{ID: "f3"}, Shot: "shots/f3.png"},
		Event{Type: TypeResult, Step: 1, CallID: "c", Frame: screen.Frame{ID: "f4"}, Shot: secret},
	)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatalf("WriteReport() = %v", err)
	}
	doc := parseReport(t, path)
	if n := findAll(doc, isElem("image")); len(n) != 0 {
		t.Errorf("report inlined %d images from missing, foreign or non-image files, want 0", len(n))
	}
	missing := findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "missing" })
	if len(missing) != 6 {
		t.Errorf("report has %d missing-screenshot placeholders, want 6 (before and after of 3 calls)", len(missing))
	}
}
