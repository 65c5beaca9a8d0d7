package trace

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

var demoDir = flag.String("demo", "", "also write the demo trace and its report.html to this directory")

// The demo run's geometry: a 1280x800 CSS viewport at DPR 2, sent to the
// model as 1024x640, so model and CSS coordinates differ by 1.25.
const (
	demoW, demoH = 1024, 640
	demoScale    = 1280.0 / demoW
)

// box is a rectangle of a fake page, in image pixels.
type box struct {
	x, y, w, h int
	fill       color.RGBA
	text       string
	ink        color.RGBA
}

var (
	white  = color.RGBA{255, 255, 255, 255}
	ink    = color.RGBA{30, 34, 40, 255}
	muted  = color.RGBA{110, 118, 130, 255}
	line   = color.RGBA{222, 226, 232, 255}
	brand  = color.RGBA{36, 41, 61, 255}
	accent = color.RGBA{62, 99, 221, 255}
	soft   = color.RGBA{244, 246, 250, 255}
	green  = color.RGBA{31, 136, 61, 255}
)

// page draws a fake shop page with the basic font scaled 2x.
func page(t testing.TB, boxes ...box) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, demoW, demoH))
	fill(img, image.Rect(0, 0, demoW, demoH), white)
	fill(img, image.Rect(0, 0, demoW, 56), brand)
	label(img, 24, 20, "shop.example", white)
	label(img, 860, 20, "Cart", white)
	for _, b := range boxes {
		r := image.Rect(b.x, b.y, b.x+b.w, b.y+b.h)
		if b.fill.A != 0 {
			fill(img, r, b.fill)
			if b.fill == white {
				outline(img, r, line)
			}
		}
		if b.text != "" {
			c := b.ink
			if c.A == 0 {
				c = ink
			}
			label(img, b.x+12, b.y+(b.h-26)/2, b.text, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	xdraw.Draw(img, r, image.NewUniform(c), image.Point{}, xdraw.Src)
}

func outline(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for _, e := range []image.Rectangle{
		{r.Min, image.Pt(r.Max.X, r.Min.Y+1)}, {image.Pt(r.Min.X, r.Max.Y-1), r.Max},
		{r.Min, image.Pt(r.Min.X+1, r.Max.Y)}, {image.Pt(r.Max.X-1, r.Min.Y), r.Max},
	} {
		fill(img, e, c)
	}
}

// label draws s with its top left at (x, y), twice the basic font's size.
func label(img *image.RGBA, x, y int, s string, c color.RGBA) {
	face := basicfont.Face7x13
	small := image.NewRGBA(image.Rect(0, 0, 7*len(s), 13))
	d := font.Drawer{Dst: small, Src: image.NewUniform(c), Face: face, Dot: fixed.P(0, 11)}
	d.DrawString(s)
	dst := image.Rect(x, y, x+14*len(s), y+26)
	xdraw.NearestNeighbor.Scale(img, dst, small, small.Bounds(), xdraw.Over, nil)
}

func product(x, y int, name, price string) []box {
	return []box{
		{x: x, y: y, w: 300, h: 200, fill: white},
		{x: x + 1, y: y + 1, w: 298, h: 110, fill: soft},
		{x: x, y: y + 120, h: 30, text: name},
		{x: x, y: y + 156, h: 30, text: price, ink: green},
	}
}

func concat(bs ...[]box) []box {
	var out []box
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// demoRun writes a small fake run into dir: eight steps with clicks, typing,
// a scroll, a drag, a refused click and a failed call.
func demoRun(t testing.TB, dir string) {
	t.Helper()
	var pageLogs map[string]screen.PageLog
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	clock := start
	tick := func(d time.Duration) time.Time { clock = clock.Add(d); return clock }
	write := func(e Event) {
		t.Helper()
		if e.Time.IsZero() {
			e.Time = tick(300 * time.Millisecond)
		}
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	nframe := 0
	shot := func(url string, boxes ...box) (screen.Frame, string) {
		t.Helper()
		nframe++
		f := screen.Frame{
			ID: "f" + string(rune('0'+nframe/10)) + string(rune('0'+nframe%10)), Time: tick(800 * time.Millisecond), URL: url,
			Viewport: screen.Size{W: 1280, H: 800}, DPR: 2, Clip: actions.Rect{Max: actions.Pt(1280, 800)},
			Capture: screen.Size{W: 2560, H: 1600}, Sent: screen.Size{W: demoW, H: demoH}, Format: screen.PNG,
		}
		rel, err := w.WriteShot(screen.Shot{Frame: f, Data: page(t, boxes...)})
		if err != nil {
			t.Fatal(err)
		}
		return f, rel
	}
	mapped := func(a actions.Action) screen.Mapped {
		a.At = actions.Pt(a.At.X*demoScale, a.At.Y*demoScale)
		a.Path = slices.Clone(a.Path)
		for i, p := range a.Path {
			a.Path[i] = actions.Pt(p.X*demoScale, p.Y*demoScale)
		}
		a.DeltaX, a.DeltaY = a.DeltaX*demoScale, a.DeltaY*demoScale
		return screen.Mapped{Action: a}
	}
	step := 0
	turn := func(text string, in, out int, stop string) {
		step++
		write(Event{Type: TypeModelTurn, Step: step, Text: text, Stop: stop,
			Usage: Usage{InputTokens: in, OutputTokens: out, CostUSD: float64(in)*3e-6 + float64(out)*15e-6}, Elapsed: 2100 * time.Millisecond})
	}
	call := func(id string, frame string, as []actions.Action, errs map[int]string, ran int, resErr string, notes []string, after screen.Frame, afterRel string) {
		write(Event{Type: TypeCall, Step: step, CallID: id, Name: "computer"})
		for i, a := range as {
			e := Event{Type: TypeAction, Step: step, CallID: id, Index: i, Action: a, FrameID: frame, Error: errs[i], Elapsed: 80 * time.Millisecond}
			if errs[i] == "" {
				e.Mapped = mapped(a)
			}
			write(e)
		}
		write(Event{Type: TypeResult, Step: step, CallID: id, Ran: ran, Error: resErr, Notes: notes, Frame: after, Shot: afterRel, Elapsed: 900 * time.Millisecond,
			Page: pageLogs[id]})
	}
	click := func(x, y float64) actions.Action {
		return actions.Action{Kind: actions.Click, At: actions.Pt(x, y), HasAt: true}
	}
	// What the page logged and requested during some of the calls.
	pageLogs = map[string]screen.PageLog{
		"toolu_01": {Requests: []screen.Request{
			{Time: start.Add(1200 * time.Millisecond), Method: "GET", URL: "https://shop.example/search?q=wireless+headphones", Type: "document", Status: 200, Duration: 182 * time.Millisecond},
			{Time: start.Add(1390 * time.Millisecond), Method: "GET", URL: "https://shop.example/static/results.js", Type: "script", Status: 200, Duration: 24 * time.Millisecond},
			{Time: start.Add(1420 * time.Millisecond), Method: "POST", URL: "https://shop.example/api/track", Type: "fetch", Status: 204, Duration: 41 * time.Millisecond},
		}},
		"toolu_06": {
			Console: []screen.ConsoleMessage{
				{Time: start.Add(11 * time.Second), Level: "warning", Source: "console", Text: "[cart] stock API slow: 1200 ms"},
				{Time: start.Add(11200 * time.Millisecond), Level: "error", Source: "exception", Text: "Uncaught TypeError: Cannot read properties of undefined (reading 'price')",
					Where: "https://shop.example/static/product.js:88"},
				{Time: start.Add(11300 * time.Millisecond), Level: "error", Source: "network", Text: "Failed to load resource: the server responded with a status of 503 ()",
					Where: "https://shop.example/api/stock/air-lite:1"},
			},
			Requests: []screen.Request{
				{Time: start.Add(10900 * time.Millisecond), Method: "GET", URL: "https://shop.example/p/air-lite", Type: "document", Status: 200, Duration: 95 * time.Millisecond},
				{Time: start.Add(11100 * time.Millisecond), Method: "GET", URL: "https://shop.example/api/stock/air-lite", Type: "fetch", Status: 503, Duration: 1200 * time.Millisecond},
				{Time: start.Add(11150 * time.Millisecond), Method: "GET", URL: "https://cdn.example/reviews.js", Type: "script", Error: "net::ERR_NAME_NOT_RESOLVED"},
			},
		},
	}

	header := []box{{x: 24, y: 80, w: 600, h: 40, text: "Headphones & audio", ink: ink}}
	search := box{x: 262, y: 146, w: 500, h: 44, fill: white, text: "Search products", ink: muted}
	home := concat(header, []box{search, {x: 774, y: 146, w: 110, h: 44, fill: accent, text: "Search", ink: white}},
		product(40, 240, "Studio Pro", "$249.00"), product(362, 240, "Air Lite", "$89.00"), product(684, 240, "Bass One", "$129.00"))
	f1, r1 := shot("https://shop.example/", home...)
	write(Event{Type: TypeRunStart, Time: start, Task: "Find the cheapest pair of wireless headphones on shop.example and add it to the cart. Use the search box; do not check out.",
		Model: "anthropic/claude-sonnet-4-5", Frame: f1, Shot: r1})

	typed := search
	typed.text, typed.ink = "wireless headphones", ink
	sortBox := box{x: 774, y: 80, w: 226, h: 40, fill: white, text: "Sort: Featured"}
	results := concat([]box{{x: 24, y: 80, w: 600, h: 40, text: "12 results for 'wireless'"}, sortBox},
		product(40, 160, "Studio Pro", "$249.00"), product(362, 160, "Air Lite", "$89.00"), product(684, 160, "Buds Mini", "$39.00"),
		product(40, 400, "Bass One", "$129.00"), product(362, 400, "Travel ANC", "$159.00"))
	turn("I'll search for wireless headphones: click the search box, type the query and press Enter.", 2400, 160, "tool_use")
	f2, r2 := shot("https://shop.example/search?q=wireless+headphones", results...)
	call("toolu_01", f1.ID, []actions.Action{click(512, 168), {Kind: actions.Type, Text: "wireless headphones"}, {Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}},
		nil, 3, "", nil, f2, r2)

	open := concat(results, []box{{x: 774, y: 120, w: 226, h: 120, fill: white}, {x: 775, y: 124, w: 224, h: 36, text: "Featured"},
		{x: 775, y: 162, w: 224, h: 36, fill: soft, text: "Price: low to high"}, {x: 775, y: 200, w: 224, h: 36, text: "Price: high to low"}})
	turn("There are 12 results. I'll sort them by price, lowest first.", 3900, 90, "tool_use")
	f3, r3 := shot(f2.URL, open...)
	call("toolu_02", f2.ID, []actions.Action{click(887, 100)}, nil, 1, "", nil, f3, r3)

	sorted := concat([]box{{x: 24, y: 80, w: 600, h: 40, text: "12 results for 'wireless'"}, {x: 774, y: 80, w: 226, h: 40, fill: white, text: "Sort: Price"}},
		product(40, 160, "Buds Mini", "$39.00"), product(362, 160, "Air Lite", "$89.00"), product(684, 160, "Bass One", "$129.00"),
		product(40, 400, "Travel ANC", "$159.00"), product(362, 400, "Studio Pro", "$249.00"))
	turn("Choosing \"Price: low to high\".", 5200, 60, "tool_use")
	f4, r4 := shot(f2.URL+"&sort=price", sorted...)
	call("toolu_03", f3.ID, []actions.Action{click(887, 180)}, nil, 1, "", []string{"the page did not settle within 5s; the screenshot was taken anyway"}, f4, r4)

	turn("Buds Mini at $39.00 is first, but it may be wired. Let me check the filters below the list.", 6400, 70, "tool_use")
	f5, r5 := shot(f4.URL, concat([]box{{x: 24, y: 80, w: 400, h: 40, text: "Filters"}, {x: 24, y: 140, w: 420, h: 8, fill: line},
		{x: 24, y: 136, w: 16, h: 16, fill: accent}, {x: 428, y: 136, w: 16, h: 16, fill: accent}, {x: 24, y: 170, h: 30, text: "Price $0 - $300", ink: muted},
		{x: 24, y: 220, w: 300, h: 36, fill: white, text: "[x] Wireless only"}}, product(500, 100, "Buds Mini (wired)", "$39.00"))...)
	call("toolu_04", f4.ID, []actions.Action{{Kind: actions.Scroll, At: actions.Pt(512, 400), HasAt: true, DeltaY: 480}}, nil, 1, "", nil, f5, r5)

	turn("I'll narrow the price range to under $100 by dragging the right handle.", 7000, 85, "tool_use")
	f6, r6 := shot(f4.URL+"&max=100", concat([]box{{x: 24, y: 80, w: 400, h: 40, text: "Filters"}, {x: 24, y: 140, w: 170, h: 8, fill: accent},
		{x: 24, y: 136, w: 16, h: 16, fill: accent}, {x: 180, y: 136, w: 16, h: 16, fill: accent}, {x: 24, y: 170, h: 30, text: "Price $0 - $100", ink: muted}},
		product(500, 100, "Air Lite", "$89.00"))...)
	call("toolu_05", f5.ID, []actions.Action{{Kind: actions.Drag, Path: []actions.Point{actions.Pt(436, 144), actions.Pt(300, 150), actions.Pt(188, 144)}}}, nil, 1, "", nil, f6, r6)

	turn("Air Lite at $89.00 is the cheapest wireless pair. Opening it; then I'll press Add to cart.", 7800, 120, "tool_use")
	detailPage := []box{{x: 24, y: 80, w: 600, h: 40, text: "Air Lite - wireless, 30h battery"},
		{x: 24, y: 140, w: 440, h: 440, fill: soft}, {x: 500, y: 150, h: 40, text: "$89.00", ink: green}}
	f7, r7 := shot("https://shop.example/p/air-lite", concat(detailPage, []box{{x: 500, y: 260, w: 240, h: 48, fill: accent, text: "Add to cart", ink: white}})...)
	call("toolu_06", f6.ID, []actions.Action{click(650, 180), click(1100, 300)},
		map[int]string{1: "coordinate outside the screenshot: (1100, 300) is not inside 1024x640"}, 1,
		"action 2 of 2 was refused: coordinate outside the screenshot: (1100, 300) is not inside 1024x640",
		[]string{"a new tab opened: https://shop.example/p/air-lite"}, f7, r7)

	turn("My second click was off the page. Clicking Add to cart on the product page.", 8600, 70, "tool_use")
	f8, r8 := shot(f7.URL, concat(detailPage, []box{{x: 500, y: 260, w: 240, h: 48, fill: green, text: "Added (1)", ink: white}})...)
	call("toolu_07", f7.ID, []actions.Action{click(620, 284)}, nil, 1, "", nil, f8, r8)

	turn("Done: the Air Lite wireless headphones ($89.00) are in the cart. <b>not bold</b>", 9100, 60, "end_turn")
	write(Event{Type: TypeRunEnd, Step: step, Stop: "end_turn", Time: tick(time.Second), Elapsed: clock.Sub(start)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReportDemo renders the demo run. With -demo DIR it also leaves the
// trace and report in DIR, to look at:
//
//	go test ./harness/trace/ -run TestReportDemo -demo /tmp/trace-demo
func TestReportDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if *demoDir != "" {
		dir = *demoDir
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	demoRun(t, dir)
	got, err := WriteReport(dir)
	if err != nil {
		t.Fatalf("WriteReport(%q) = %v", dir, err)
	}
	if want := filepath.Join(dir, ReportFile); got != want {
		t.Errorf("WriteReport(%q) = %q, want %q", dir, got, want)
	}
	doc := parseReport(t, got)
	if n := len(findAll(doc, isElem("section"))); n != 8 {
		t.Errorf("report has %d step sections, want 8", n)
	}
	// Seven distinct screenshots after the first are inlined once each.
	if n := len(findAll(doc, isElem("image"))); n != 8 {
		t.Errorf("report inlines %d images, want 8 (one per frame)", n)
	}
}

// longRun writes a run of n steps, one click each, with screenshots of about
// 100 KB, like real ones.
func longRun(tb testing.TB, dir string, n int) {
	tb.Helper()
	w, err := Create(dir)
	if err != nil {
		tb.Fatal(err)
	}
	base := page(tb, product(40, 240, "Studio Pro", "$249.00")...)
	img, err := png.Decode(bytes.NewReader(base))
	if err != nil {
		tb.Fatal(err)
	}
	rgba := img.(*image.RGBA)
	seed := uint32(1)
	shot := func(i int) (screen.Frame, string) {
		for y := 400; y < 600; y++ { // noise compresses badly, as photos and text do
			for x := 400; x < 700; x++ {
				seed = seed*1664525 + 1013904223
				rgba.SetRGBA(x, y, color.RGBA{uint8(seed >> 24), uint8(seed >> 16), uint8(i), 255})
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, rgba); err != nil {
			tb.Fatal(err)
		}
		f := imageFrame(fmt.Sprintf("f%04d", i), "https://shop.example/")
		rel, err := w.WriteShot(screen.Shot{Frame: f, Data: buf.Bytes()})
		if err != nil {
			tb.Fatal(err)
		}
		return f, rel
	}
	f, rel := shot(0)
	must := func(e Event) {
		if err := w.Write(e); err != nil {
			tb.Fatal(err)
		}
	}
	must(Event{Type: TypeRunStart, Task: "a long run", Model: "fake", Frame: f, Shot: rel})
	for s := 1; s <= n; s++ {
		id := fmt.Sprintf("c%d", s)
		must(Event{Type: TypeModelTurn, Step: s, Text: "clicking again", Stop: "tool_use"})
		must(Event{Type: TypeCall, Step: s, CallID: id})
		must(Event{Type: TypeAction, Step: s, CallID: id, FrameID: f.ID,
			Action: actions.Action{Kind: actions.Click, At: actions.Pt(float64(10*s), 300), HasAt: true}})
		f, rel = shot(s)
		must(Event{Type: TypeResult, Step: s, CallID: id, Ran: 1, Frame: f, Shot: rel})
	}
	must(Event{Type: TypeRunEnd, Step: n, Stop: "max_steps"})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkWriteReport50Steps(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	if *demoDir != "" {
		dir = filepath.Join(*demoDir, "long")
		os.RemoveAll(dir)
	}
	longRun(b, dir, 50)
	for b.Loop() {
		if _, err := WriteReport(dir); err != nil {
			b.Fatal(err)
		}
	}
}
