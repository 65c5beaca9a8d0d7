package bench

import (
	"embed"
	"fmt"
	"image"
	"image/color"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

//go:embed pages
var pagesFS embed.FS

// The benchmark pages. Each has a button at buttonAt and a swatch at
// swatchAt (CSS px of a 1280x800 viewport) whose colour says how many times
// the button was clicked: off (red) after an even number, on (green) after
// an odd one. On the loading page a click first greys the swatch, fetches
// /slow, and only then fades to the new colour, so a screenshot taken before
// the page settled shows grey or a mix.
var (
	buttonAt  = actions.Pt(200, 200)
	swatchAt  = actions.Pt(750, 200)
	swatchOff = color.RGBA{220, 40, 40, 255}
	swatchOn  = color.RGBA{40, 160, 40, 255}
)

// Page names.
const (
	pageStatic  = "static"
	pageLoading = "loading"
)

// site serves the pages on loopback until Close.
type site struct {
	srv *http.Server
	ln  net.Listener
}

func startSite() (*site, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /pages/", http.FileServerFS(pagesFS))
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		t := time.NewTimer(time.Duration(min(max(ms, 0), 5000)) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, "ok")
	})
	s := &site{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go s.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close
	return s, nil
}

func (s *site) url(page string) string {
	return "http://" + s.ln.Addr().String() + "/pages/" + page + ".html"
}

func (s *site) Close() error { return s.srv.Close() }

// shotCheck is a screenshot and the swatch state it must show. The
// sections that time steps check their screenshots once the timing is
// over: decoding one 1280x800 PNG makes about 8 MB of garbage, and
// collecting it while the next sample runs would count against whatever
// runs in this process (Spotter's displays, the server and its store).
type shotCheck struct {
	png []byte
	on  bool
}

// right reports whether the screenshot shows the swatch in state on.
func (c shotCheck) right() bool {
	got, ok := shotSwatch(c.png)
	return ok && got == c.on
}

// countWrong decodes each screenshot of cs and returns how many do not
// show their swatch's state.
func countWrong(cs []shotCheck) int {
	n := 0
	for _, c := range cs {
		if !c.right() {
			n++
		}
	}
	return n
}

// swatchState reports whether img (a screenshot of the whole viewport, at
// any scale) shows the swatch on, off, or neither (mid-change).
func swatchState(img image.Image, viewport actions.Point) (on, ok bool) {
	b := img.Bounds()
	x := b.Min.X + int(swatchAt.X*float64(b.Dx())/viewport.X)
	y := b.Min.Y + int(swatchAt.Y*float64(b.Dy())/viewport.Y)
	c := img.At(x, y)
	switch {
	case near(c, swatchOn, 40):
		return true, true
	case near(c, swatchOff, 40):
		return false, true
	}
	return false, false
}

func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, w uint8) int { return abs(int(a>>8) - int(w)) }
	return d(r, want.R) <= tol && d(g, want.G) <= tol && d(b, want.B) <= tol
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
