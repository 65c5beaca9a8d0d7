package cdp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func encoded(t testing.TB, f screen.Format, w, h int) []byte {
	t.Helper()
	type key struct {
		f    screen.Format
		w, h int
	}
	k := key{f, w, h}
	if b, ok := encodedImages.Load(k); ok {
		return slices.Clone(b.([]byte))
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	var err error
	if f == screen.JPEG {
		err = jpeg.Encode(&buf, img, nil)
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	encodedImages.Store(k, buf.Bytes())
	return slices.Clone(buf.Bytes())
}

// encodedImages are encoded's images, by format and size: a fake frame
// loop asks for hundreds of the same (TestFrameGrab), each an encoding
// that takes a second under the race detector.
var encodedImages sync.Map

func TestImageSize(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		format  screen.Format
		size    screen.Size
		wantErr bool
	}{
		{"png", encoded(t, screen.PNG, 1024, 640), screen.PNG, screen.Size{W: 1024, H: 640}, false},
		{"jpeg", encoded(t, screen.JPEG, 33, 17), screen.JPEG, screen.Size{W: 33, H: 17}, false},
		{"empty", nil, "", screen.Size{}, true},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), "", screen.Size{}, true},
		{"truncated png", encoded(t, screen.PNG, 8, 8)[:12], "", screen.Size{}, true},
		{"truncated jpeg", []byte{0xff, 0xd8, 0xff}, "", screen.Size{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format, size, err := imageSize(tt.data)
			if (err != nil) != tt.wantErr || format != tt.format || size != tt.size {
				t.Errorf("imageSize(%s) = %q, %v, %v; want %q, %v, error %v", tt.name, format, size, err, tt.format, tt.size, tt.wantErr)
			}
		})
	}
}

func FuzzImageSize(f *testing.F) {
	f.Add(encoded(f, screen.PNG, 3, 2))
	f.Add(encoded(f, screen.JPEG, 5, 9))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11})
	f.Fuzz(func(t *testing.T, data []byte) {
		format, size, err := imageSize(data)
		if err != nil {
			return
		}
		if format != screen.PNG && format != screen.JPEG {
			t.Errorf("imageSize(%q) = format %q without an error", data, format)
		}
		if size.W < 0 || size.H < 0 {
			t.Errorf("imageSize(%q) = size %v", data, size)
		}
	})
}

func TestDragPoints(t *testing.T) {
	pt := actions.Pt
	tests := []struct {
		name string
		path []actions.Point
		want []actions.Point
	}{
		{"short", []actions.Point{pt(0, 0), pt(10, 0)}, []actions.Point{pt(10, 0)}},
		{"same point", []actions.Point{pt(5, 5), pt(5, 5)}, []actions.Point{pt(5, 5)}},
		{"interpolated", []actions.Point{pt(0, 0), pt(0, 60)}, []actions.Point{pt(0, 20), pt(0, 40), pt(0, 60)}},
		{"corner", []actions.Point{pt(0, 0), pt(40, 0), pt(40, 15)}, []actions.Point{pt(20, 0), pt(40, 0), pt(40, 15)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, dragPoints(tt.path)); diff != "" {
				t.Errorf("dragPoints(%v) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
	t.Run("long", func(t *testing.T) {
		path := []actions.Point{pt(0, 0), pt(5000, 0)}
		got := dragPoints(path)
		if len(got) != dragMaxSteps || got[len(got)-1] != path[1] {
			t.Errorf("dragPoints(%v) = %d points ending at %v, want %d ending at %v", path, len(got), got[len(got)-1], dragMaxSteps, path[1])
		}
	})
}

func TestEditCommand(t *testing.T) {
	key := func(k actions.Key) actions.KeyInfo {
		i, ok := actions.LookupKey(k)
		if !ok {
			t.Fatalf("LookupKey(%q) = false", k)
		}
		return i
	}
	tests := []struct {
		key  actions.Key
		mods int64
		want string
	}{
		{"a", modCtrl, "selectAll"},
		{"a", modMeta, "selectAll"},
		{"c", modCtrl, "copy"},
		{"x", modCtrl, "cut"},
		{"v", modCtrl, "paste"},
		{"z", modCtrl, "undo"},
		{"Z", modCtrl | modShift, "redo"},
		{"y", modCtrl, "redo"},
		{"a", 0, ""},
		{"a", modShift, ""},
		{"a", modCtrl | modAlt, ""},
		{"b", modCtrl, ""},
		{"Enter", modCtrl, ""},
	}
	for _, tt := range tests {
		if got := editCommand(key(tt.key), tt.mods); got != tt.want {
			t.Errorf("editCommand(%q, %d) = %q, want %q", tt.key, tt.mods, got, tt.want)
		}
	}
}

func TestShifted(t *testing.T) {
	tests := []struct{ in, want actions.Key }{
		{"a", "A"}, {"A", "A"}, {"1", "!"}, {"/", "?"}, {"Enter", "Enter"}, {"PageDown", "PageDown"}, {"Space", "Space"},
	}
	for _, tt := range tests {
		in, _ := actions.LookupKey(tt.in)
		if got := shifted(in).Key; got != tt.want {
			t.Errorf("shifted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, ok := range []string{"--lang=de", "--disable-smooth-scrolling", "window-size=10,10"} {
		if _, err := parseFlags([]string{ok}); err != nil {
			t.Errorf("parseFlags(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "--", "---x", "--=v", "--a b"} {
		if _, err := parseFlags([]string{bad}); err == nil {
			t.Errorf("parseFlags(%q) = nil, want an error", bad)
		}
	}
}

func TestLaunchWithoutChromium(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Launch(t.Context(), Config{})
	if !errors.Is(err, ErrNoBrowser) {
		t.Fatalf("Launch() with no chromium on PATH = %v, want ErrNoBrowser", err)
	}
	if want := "chromium not found on PATH: install Debian's chromium package (apt-get install -y chromium)"; err.Error() != want {
		t.Errorf("Launch() error = %q, want %q", err, want)
	}
	if _, err := Open(t.Context(), Config{Exec: "/nonexistent/chromium"}); err == nil {
		t.Errorf("Open(Exec: /nonexistent/chromium) = nil error")
	}
	for _, cfg := range []Config{
		{DPR: -1},
		{DPR: math.NaN()},
		{Viewport: screen.Size{W: -5, H: 100}},
		{Viewport: screen.Size{W: 100}},
		{SettleTimeout: -time.Second},
		{Flags: []string{"--"}},
	} {
		if _, err := Launch(t.Context(), cfg); err == nil || errors.Is(err, ErrNoBrowser) {
			t.Errorf("Launch(%+v) = %v, want an error about the config", cfg, err)
		}
	}
}

// unitDisplay is a Display with no browser: its tab is a fake session.
func unitDisplay(s cdp.Session, cfg DisplayConfig) *Display {
	d := &Display{
		cfg:    cfg.withDefaults(Config{}.withDefaults()),
		ctx:    context.Background(),
		t:      s,
		state:  newPageState(time.Now()),
		closed: make(chan struct{}),
	}
	d.r = &screencast{d: d}
	return d
}

func TestCaptureRequest(t *testing.T) {
	rect := func(x0, y0, x1, y1 float64) actions.Rect {
		return actions.Rect{Min: actions.Pt(x0, y0), Max: actions.Pt(x1, y1)}
	}
	tests := []struct {
		name    string
		dpr     float64
		opts    screen.CaptureOptions
		want    captureReq
		wantErr bool
	}{
		{"defaults", 1, screen.CaptureOptions{}, captureReq{
			clip: rect(0, 0, 1280, 800), size: screen.Size{W: 1280, H: 800}, want: screen.Size{W: 1280, H: 800},
			scale: 1, format: screen.PNG, quality: 80,
		}, false},
		{"model size at dpr 2", 2, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: screen.JPEG, Quality: 55}, captureReq{
			clip: rect(0, 0, 1280, 800), size: screen.Size{W: 1024, H: 640}, want: screen.Size{W: 1024, H: 640},
			scale: 0.4, format: screen.JPEG, quality: 55,
		}, false},
		{"other aspect ratio", 1, screen.CaptureOptions{Size: screen.Size{W: 1000, H: 1000}}, captureReq{
			clip: rect(0, 0, 1280, 800), size: screen.Size{W: 1000, H: 1000}, want: screen.Size{W: 1000, H: 625},
			scale: 1000.0 / 1280, format: screen.PNG, quality: 80,
		}, false},
		{"region at full resolution", 2, screen.CaptureOptions{Region: rect(100, 100, 300, 200), Size: screen.Size{W: 400, H: 200}}, captureReq{
			clip: rect(100, 100, 300, 200), size: screen.Size{W: 400, H: 200}, want: screen.Size{W: 400, H: 200},
			scale: 1, format: screen.PNG, quality: 80,
		}, false},
		{"region clamped", 1, screen.CaptureOptions{Region: rect(-10, 700, 100, 900)}, captureReq{
			clip: rect(0, 700, 100, 800), size: screen.Size{W: 100, H: 100}, want: screen.Size{W: 100, H: 100},
			scale: 1, format: screen.PNG, quality: 80,
		}, false},
		{"region outside", 1, screen.CaptureOptions{Region: rect(2000, 0, 2100, 100)}, captureReq{}, true},
		{"region NaN", 1, screen.CaptureOptions{Region: rect(0, 0, math.NaN(), 100)}, captureReq{}, true},
		{"bad format", 1, screen.CaptureOptions{Format: "webp"}, captureReq{}, true},
		{"bad quality", 1, screen.CaptureOptions{Quality: 101}, captureReq{}, true},
		{"half a size", 1, screen.CaptureOptions{Size: screen.Size{W: 100}}, captureReq{}, true},
		{"huge", 1, screen.CaptureOptions{Size: screen.Size{W: 100000, H: 100000}}, captureReq{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := unitDisplay(nil, DisplayConfig{DPR: tt.dpr})
			got, err := d.captureRequest(tt.opts)
			if tt.wantErr {
				if !errors.Is(err, actions.ErrInvalid) {
					t.Errorf("captureRequest(%+v) = %v, want an error wrapping ErrInvalid", tt.opts, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("captureRequest(%+v) = %v", tt.opts, err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(captureReq{})); diff != "" {
				t.Errorf("captureRequest(%+v) (-want +got):\n%s", tt.opts, diff)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	req := func(id, url string, typ network.ResourceType) *network.EventRequestWillBeSent {
		return &network.EventRequestWillBeSent{RequestID: network.RequestID(id), Request: &network.Request{URL: url}, Type: typ}
	}
	resp := func(id, length string) *network.EventResponseReceived {
		h := network.Headers{}
		if length != "" {
			h["content-length"] = length
		}
		return &network.EventResponseReceived{RequestID: network.RequestID(id), Response: &network.Response{Headers: h}}
	}
	timers := func(ctx runtime.ExecutionContextID, n string) *runtime.EventBindingCalled {
		return &runtime.EventBindingCalled{Name: timerBinding, Payload: n, ExecutionContextID: ctx}
	}
	type ev struct {
		at int
		ev any
	}
	const quiet, maxAge = 30 * time.Millisecond, time.Second
	tests := []struct {
		name   string
		events []ev
		now    int
		want   quietness
	}{
		{"idle", nil, 30, quietness{quiet: true}},
		{"just started", nil, 10, quietness{wake: ms(30), reason: "the page kept changing"}},
		{"request pending", []ev{{0, req("1", "http://x/a", network.ResourceTypeFetch)}}, 500,
			quietness{wake: ms(1000), reason: "1 network request still pending: http://x/a"}},
		{"request finished", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeFetch)},
			{100, &network.EventLoadingFinished{RequestID: "1"}},
		}, 140, quietness{quiet: true}},
		{"request failed recently", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeFetch)},
			{100, &network.EventLoadingFailed{RequestID: "1"}},
		}, 110, quietness{wake: ms(130), reason: "the page kept changing"}},
		{"old request ignored", []ev{{0, req("1", "http://x/a", network.ResourceTypeFetch)}}, 1500, quietness{quiet: true}},
		{"redirect keeps its start", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeDocument)},
			{900, req("1", "http://x/b", network.ResourceTypeDocument)},
		}, 1100, quietness{quiet: true}},
		{"streams ignored", []ev{
			{0, req("1", "http://x/events", network.ResourceTypeEventSource)},
			{0, req("2", "ws://x/", network.ResourceTypeWebSocket)},
			{0, req("3", "data:text/plain,hi", network.ResourceTypeFetch)},
		}, 30, quietness{quiet: true}},
		{"several pending", []ev{
			{0, req("1", "http://x/1", network.ResourceTypeFetch)},
			{1, req("2", "http://x/2", network.ResourceTypeXHR)},
			{2, req("3", "http://x/3", network.ResourceTypeImage)},
			{3, req("4", "http://x/4", network.ResourceTypeScript)},
		}, 100, quietness{wake: ms(1000), reason: "4 network requests still pending: http://x/1, http://x/2, http://x/3, …"}},
		{"long URL", []ev{{0, req("1", "http://x/"+strings.Repeat("é", 100), network.ResourceTypeFetch)}}, 500,
			quietness{wake: ms(1000), reason: "1 network request still pending: http://x/" + strings.Repeat("é", 55) + "…"}},
		{"loading", []ev{
			{0, &page.EventFrameNavigated{Frame: &cdp.Frame{ID: "main", URL: "http://x/"}}},
			{0, &page.EventFrameStartedLoading{FrameID: "main"}},
		}, 500, quietness{reason: "the page is still loading"}},
		{"iframe loading", []ev{
			{0, &page.EventFrameNavigated{Frame: &cdp.Frame{ID: "main", URL: "http://x/"}}},
			{0, &page.EventFrameStartedLoading{FrameID: "sub"}},
		}, 500, quietness{reason: "1 frame(s) of the page still loading"}},
		{"loaded", []ev{
			{0, &page.EventFrameStartedLoading{FrameID: "main"}},
			{50, &page.EventFrameStoppedLoading{FrameID: "main"}},
		}, 80, quietness{quiet: true}},
		{"drawing", []ev{{100, &page.EventScreencastFrame{SessionID: 1}}}, 110,
			quietness{wake: ms(130), reason: "the page kept drawing new frames (an animation?)"}},
		{"drew", []ev{{100, &page.EventScreencastFrame{SessionID: 1}}}, 130, quietness{quiet: true}},
		{"fetch body arrived, unread", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeFetch)},
			{100, resp("1", "2")},
			{101, &network.EventDataReceived{RequestID: "1", DataLength: 2}},
		}, 140, quietness{quiet: true}},
		{"fetch body arriving", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeFetch)},
			{100, resp("1", "10")},
			{101, &network.EventDataReceived{RequestID: "1", DataLength: 2}},
		}, 150, quietness{wake: ms(201), reason: "1 network request still pending: http://x/a"}},
		{"fetch body of unknown length idle", []ev{
			{0, req("1", "http://x/a", network.ResourceTypeFetch)},
			{100, resp("1", "")},
			{101, &network.EventDataReceived{RequestID: "1", DataLength: 2}},
		}, 240, quietness{quiet: true}},
		{"script body arrived, not finished", []ev{
			{0, req("1", "http://x/a.js", network.ResourceTypeScript)},
			{100, resp("1", "2")},
			{101, &network.EventDataReceived{RequestID: "1", DataLength: 2}},
		}, 240, quietness{wake: ms(1000), reason: "1 network request still pending: http://x/a.js"}},
		{"iframe moved out of process", []ev{
			{0, &network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: "http://y/f"}, Type: network.ResourceTypeDocument, FrameID: "sub"}},
			{0, &page.EventFrameStartedLoading{FrameID: "sub"}},
			{50, &target.EventAttachedToTarget{SessionID: "s1", TargetInfo: &target.Info{TargetID: "sub", Type: "iframe"}}},
			{60, &network.EventRequestWillBeSent{RequestID: "2", Request: &network.Request{URL: "http://y/g"}, Type: network.ResourceTypeDocument, FrameID: "sub"}},
		}, 80, quietness{quiet: true}},
		{"timer pending", []ev{{0, timers(1, "1")}}, 500,
			quietness{wake: ms(1000), reason: "1 timer(s) that the page set after the input still pending"}},
		{"timers in two documents", []ev{{0, timers(1, "1")}, {10, timers(2, "2")}, {20, timers(1, "2")}}, 500,
			quietness{wake: ms(1000), reason: "4 timer(s) that the page set after the input still pending"}},
		{"timer fired", []ev{{0, timers(1, "1")}, {120, timers(1, "0")}}, 130,
			quietness{wake: ms(150), reason: "the page kept changing"}},
		{"timer of a destroyed document", []ev{
			{0, &runtime.EventExecutionContextCreated{Context: &runtime.ExecutionContextDescription{ID: 1, UniqueID: "u1"}}},
			{0, timers(1, "1")},
			{10, &runtime.EventExecutionContextDestroyed{ExecutionContextUniqueID: "u1"}},
		}, 100, quietness{quiet: true}},
		{"bad timer reports ignored", []ev{{0, timers(1, "x")}, {0, timers(1, "-1")}, {0, &runtime.EventBindingCalled{Name: "other", Payload: "1"}}}, 100,
			quietness{quiet: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newPageState(t0)
			for _, e := range tt.events {
				s.event(ms(e.at), e.ev)
			}
			got := s.status(ms(tt.now), quiet, maxAge)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(quietness{})); diff != "" {
				t.Errorf("status after %d events, at %dms (-want +got):\n%s", len(tt.events), tt.now, diff)
			}
		})
	}
}

// TestCaptureEcho checks which screencast frames after a capture are the
// page's activity: the capture's own frame, when it comes after the
// capture's answer, is not; any other is.
func TestCaptureEcho(t *testing.T) {
	frame := func(s *pageState, after time.Duration) {
		s.event(time.Now().Add(after), &page.EventScreencastFrame{SessionID: 1})
	}
	for _, tt := range []struct {
		name string
		do   func(s *pageState)
		want int64
	}{
		{"own frame during the capture", func(s *pageState) {
			s.setCapturing(true)
			frame(s, 0)
			s.setCapturing(false)
			frame(s, 0) // the page's: the capture's own came
		}, 1},
		{"own frame after the capture", func(s *pageState) {
			s.setCapturing(true)
			s.setCapturing(false)
			frame(s, 0)
		}, 0},
		{"own frame after the capture, then the page's", func(s *pageState) {
			s.setCapturing(true)
			s.setCapturing(false)
			frame(s, 0)
			frame(s, 0)
		}, 1},
		{"a frame long after the capture", func(s *pageState) {
			s.setCapturing(true)
			s.setCapturing(false)
			frame(s, captureEcho+time.Millisecond)
			frame(s, captureEcho+2*time.Millisecond)
		}, 2},
		{"an input after the capture", func(s *pageState) {
			s.setCapturing(true)
			s.setCapturing(false)
			s.markInput()
			frame(s, 0)
		}, 1},
		{"two captures", func(s *pageState) {
			s.setCapturing(true)
			s.setCapturing(false)
			s.setCapturing(true)
			frame(s, 0)
			s.setCapturing(false)
			frame(s, 0)
		}, 1},
	} {
		s := newPageState(time.Now())
		tt.do(s)
		if got := s.frameCount(); got != tt.want {
			t.Errorf("%s: %d frames of activity, want %d", tt.name, got, tt.want)
		}
	}
}

func TestStateEvents(t *testing.T) {
	s := newPageState(time.Now())
	s.event(time.Now(), &page.EventFrameNavigated{Frame: &cdp.Frame{ID: "main", URL: "http://x/a", URLFragment: "#top"}})
	s.event(time.Now(), &page.EventFrameNavigated{Frame: &cdp.Frame{ID: "sub", ParentID: "main", URL: "http://y/"}})
	if got := s.currentURL(); got != "http://x/a#top" {
		t.Errorf("URL after navigations = %q, want http://x/a#top", got)
	}
	s.event(time.Now(), &page.EventNavigatedWithinDocument{FrameID: "main", URL: "http://x/a#b"})
	if got := s.currentURL(); got != "http://x/a#b" {
		t.Errorf("URL after a same-document navigation = %q, want http://x/a#b", got)
	}
	s.setCapturing(true)
	s.event(time.Now(), &page.EventScreencastFrame{SessionID: 7})
	s.setCapturing(false)
	s.event(time.Now(), &page.EventScreencastFrame{SessionID: 8})
	if got := s.frameCount(); got != 1 {
		t.Errorf("frames counted = %d, want 1: a capture's own frame is not activity", got)
	}
	if diff := cmp.Diff([]int64{7, 8}, s.takeAcks()); diff != "" {
		t.Errorf("frames to acknowledge (-want +got):\n%s", diff)
	}
	s.event(time.Now(), &inspector.EventTargetCrashed{})
	s.note("a %s opened", "tab")
	if diff := cmp.Diff([]string{"the page crashed", "a tab opened"}, s.takeEvents()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.takeEvents() != nil {
		t.Errorf("takeEvents() twice returned events twice")
	}
	if !s.isCrashed() {
		t.Errorf("isCrashed() = false after Inspector.targetCrashed")
	}
}

// fakeTab answers the Runtime.evaluate calls of settle: the fence at once,
// and the animation count from animations.
type fakeTab struct {
	animations func() int
	onFence    func()
	probeErr   error // the answer to every animation question
	evals      atomic.Int64
}

func (f *fakeTab) Call(ctx context.Context, method string, params, res any) error {
	if method != runtime.CommandEvaluate {
		return errors.New("unexpected " + method)
	}
	f.evals.Add(1)
	p := params.(runtime.EvaluateParams)
	v := "0"
	switch {
	case p.Expression == frameFenceJS && f.onFence != nil:
		f.onFence()
	case p.Expression == animationsJS && f.probeErr != nil:
		return f.probeErr
	case p.Expression == animationsJS && f.animations != nil:
		v = "[" + strconv.Itoa(f.animations()) + ",0,0]"
	}
	res.(*runtime.EvaluateResult).Result = &runtime.RemoteObject{Type: "number", Value: jsonv2.Value(v)}
	return nil
}

func (f *fakeTab) Subscribe(string) (<-chan jsonv2.Value, func()) { return nil, func() {} }

func TestSettle(t *testing.T) {
	url := "http://x/slow"
	tests := []struct {
		name    string
		timeout time.Duration
		// page runs in the bubble before settle, and may start goroutines
		// that change the page's state later.
		page        func(d *Display, f *fakeTab)
		wantWaited  time.Duration
		slack       time.Duration // how much longer than wantWaited is right
		wantTimeout bool
		wantReason  string
	}{
		{
			name:       "idle after input",
			timeout:    time.Second,
			page:       func(d *Display, f *fakeTab) { d.state.markInput() },
			wantWaited: DefaultQuietWindow,
		},
		{
			name:    "input redraws once",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				d.state.markInput()
				f.onFence = func() {
					go func() {
						time.Sleep(10 * time.Millisecond)
						d.state.event(time.Now(), &page.EventScreencastFrame{SessionID: 1})
					}()
				}
			},
			// The frame after the fence is the input's own redraw.
			wantWaited: DefaultQuietWindow,
		},
		{
			name:    "input starts drawing",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				d.state.markInput()
				f.onFence = func() {
					go func() {
						for i := range 10 {
							time.Sleep(10 * time.Millisecond)
							d.state.event(time.Now(), &page.EventScreencastFrame{SessionID: int64(i)})
						}
					}()
				}
			},
			// The first frame is the input's redraw; the others, 10ms
			// apart, are the page drawing on its own; then the quiet
			// window.
			wantWaited: 100*time.Millisecond + DefaultQuietWindow,
		},
		{
			name:    "request finishes",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				d.state.event(time.Now(), &network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: url}})
				go func() {
					time.Sleep(300 * time.Millisecond)
					d.state.event(time.Now(), &network.EventLoadingFinished{RequestID: "1"})
				}()
			},
			wantWaited: 300*time.Millisecond + DefaultQuietWindow,
		},
		{
			name:    "request never finishes",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				d.state.event(time.Now(), &network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: url}})
			},
			wantWaited:  time.Second,
			wantTimeout: true,
			wantReason:  "1 network request still pending: " + url,
		},
		{
			name:    "animation ends",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				start := time.Now()
				f.animations = func() int {
					if time.Since(start) < 200*time.Millisecond {
						return 2
					}
					return 0
				}
			},
			wantWaited: 200 * time.Millisecond,
			slack:      animationPoll, // settle notices within one poll
		},
		{
			name:    "animation never ends",
			timeout: 500 * time.Millisecond,
			page: func(d *Display, f *fakeTab) {
				f.animations = func() int { return 1 }
			},
			wantWaited:  500 * time.Millisecond,
			wantTimeout: true,
			wantReason:  "1 animation(s) still running",
		},
		{
			name:    "page cannot answer",
			timeout: time.Second,
			page: func(d *Display, f *fakeTab) {
				f.probeErr = errors.New("Execution context was destroyed")
			},
			wantWaited: maxProbeErrs * animationPoll,
		},
		{
			name:    "no wait",
			timeout: -1,
			page: func(d *Display, f *fakeTab) {
				d.state.event(time.Now(), &page.EventFrameStartedLoading{FrameID: "main"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeTab{}
				d := unitDisplay(f, DisplayConfig{})
				d.state.lastActivity = time.Time{}
				tt.page(d, f)
				got, err := d.settle(t.Context(), tt.timeout)
				if err != nil {
					t.Fatalf("settle(%v) = %v", tt.timeout, err)
				}
				if got.Waited < tt.wantWaited || got.Waited > tt.wantWaited+tt.slack {
					t.Errorf("settle(%v).Waited = %v, want %v", tt.timeout, got.Waited, tt.wantWaited)
				}
				if got.TimedOut != tt.wantTimeout || got.Reason != tt.wantReason {
					t.Errorf("settle(%v) = %+v, want TimedOut %v, Reason %q", tt.timeout, got, tt.wantTimeout, tt.wantReason)
				}
			})
		})
	}
}

func TestSettleCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := unitDisplay(&fakeTab{}, DisplayConfig{})
		d.state.event(time.Now(), &page.EventFrameStartedLoading{FrameID: "main"})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := d.settle(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("settle with a context that ends = %v, want DeadlineExceeded", err)
		}
		close(d.closed)
		if _, err := d.settle(t.Context(), time.Minute); !errors.Is(err, screen.ErrGone) {
			t.Errorf("settle on a closed display = %v, want ErrGone", err)
		}
	})
}

// inputTab records the input events a display sends, in a short form.
type inputTab struct {
	sent []string
}

func (f *inputTab) Call(ctx context.Context, method string, params, res any) error {
	switch p := params.(type) {
	case input.DispatchKeyEventParams:
		s := fmt.Sprintf("key %s %q %s mods=%d", p.Type, p.Key, p.Code, p.Modifiers)
		if p.Text != "" {
			s += fmt.Sprintf(" text=%q", p.Text)
		}
		if len(p.Commands) > 0 {
			s += fmt.Sprintf(" commands=%v", p.Commands)
		}
		f.sent = append(f.sent, s)
	case input.DispatchMouseEventParams:
		s := fmt.Sprintf("mouse %s (%g,%g) buttons=%d mods=%d", p.Type, p.X, p.Y, p.Buttons, p.Modifiers)
		if p.Type != input.DispatchMouseEventTypeMouseMoved {
			s += fmt.Sprintf(" %s clicks=%d", p.Button, p.ClickCount)
		}
		f.sent = append(f.sent, s)
	case wheelParams:
		f.sent = append(f.sent, fmt.Sprintf("wheel (%g,%g) delta=(%g,%g) mods=%d", p.X, p.Y, p.DeltaX, p.DeltaY, p.Modifiers))
	case input.InsertTextParams:
		f.sent = append(f.sent, fmt.Sprintf("insert %q", p.Text))
	default:
		return fmt.Errorf("unexpected %s", method)
	}
	return nil
}

func (f *inputTab) Subscribe(string) (<-chan jsonv2.Value, func()) { return nil, func() {} }

func TestPerformSendsEvents(t *testing.T) {
	pt := actions.Pt
	tests := []struct {
		name string
		a    actions.Action
		want []string
	}{
		{"click", actions.Action{Kind: actions.Click, At: pt(10, 20), HasAt: true}, []string{
			"mouse mouseMoved (10,20) buttons=0 mods=0",
			"mouse mousePressed (10,20) buttons=1 mods=0 left clicks=1",
			"mouse mouseReleased (10,20) buttons=0 mods=0 left clicks=1",
		}},
		{"right double click", actions.Action{Kind: actions.DoubleClick, At: pt(1, 2), HasAt: true, Button: actions.Right}, []string{
			"mouse mouseMoved (1,2) buttons=0 mods=0",
			"mouse mousePressed (1,2) buttons=2 mods=0 right clicks=1",
			"mouse mouseReleased (1,2) buttons=0 mods=0 right clicks=1",
			"mouse mousePressed (1,2) buttons=2 mods=0 right clicks=2",
			"mouse mouseReleased (1,2) buttons=0 mods=0 right clicks=2",
		}},
		{"control click", actions.Action{Kind: actions.Click, At: pt(5, 5), HasAt: true, Modifiers: actions.Chord{actions.Control}}, []string{
			`key rawKeyDown "Control" ControlLeft mods=2`,
			"mouse mouseMoved (5,5) buttons=0 mods=2",
			"mouse mousePressed (5,5) buttons=1 mods=2 left clicks=1",
			"mouse mouseReleased (5,5) buttons=0 mods=2 left clicks=1",
			`key keyUp "Control" ControlLeft mods=0`,
		}},
		{"mouse down at the pointer", actions.Action{Kind: actions.MouseDown, Button: actions.Middle}, []string{
			"mouse mousePressed (0,0) buttons=4 mods=0 middle clicks=1",
		}},
		{"drag", actions.Action{Kind: actions.Drag, Path: []actions.Point{pt(0, 0), pt(0, 30), pt(10, 30)}}, []string{
			"mouse mousePressed (0,0) buttons=1 mods=0 left clicks=1",
			"mouse mouseMoved (0,15) buttons=1 mods=0",
			"mouse mouseMoved (0,30) buttons=1 mods=0",
			"mouse mouseMoved (10,30) buttons=1 mods=0",
			"mouse mouseReleased (10,30) buttons=0 mods=0 left clicks=1",
		}},
		{"shift scroll", actions.Action{Kind: actions.Scroll, At: pt(7, 8), HasAt: true, DeltaX: 0, DeltaY: 120, Modifiers: actions.Chord{actions.Shift}}, []string{
			`key rawKeyDown "Shift" ShiftLeft mods=8`,
			"mouse mouseMoved (7,8) buttons=0 mods=8",
			"wheel (7,8) delta=(0,120) mods=8",
			`key keyUp "Shift" ShiftLeft mods=0`,
		}},
		{"type", actions.Action{Kind: actions.Type, Text: "a!é\n"}, []string{
			`key keyDown "a" KeyA mods=0 text="a"`,
			`key keyUp "a" KeyA mods=0`,
			`key rawKeyDown "Shift" ShiftLeft mods=8`,
			`key keyDown "!" Digit1 mods=8 text="!"`,
			`key keyUp "!" Digit1 mods=8`,
			`key keyUp "Shift" ShiftLeft mods=0`,
			`insert "é"`,
			`key keyDown "Enter" Enter mods=0 text="\r"`,
			`key keyUp "Enter" Enter mods=0`,
		}},
		{"chord", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "PageDown"}}, []string{
			`key rawKeyDown "Control" ControlLeft mods=2`,
			`key rawKeyDown "Shift" ShiftLeft mods=10`,
			`key rawKeyDown "PageDown" PageDown mods=10`,
			`key keyUp "PageDown" PageDown mods=10`,
			`key keyUp "Shift" ShiftLeft mods=2`,
			`key keyUp "Control" ControlLeft mods=0`,
		}},
		{"select all", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "a"}}, []string{
			`key rawKeyDown "Control" ControlLeft mods=2`,
			`key rawKeyDown "a" KeyA mods=2 commands=[selectAll]`,
			`key keyUp "a" KeyA mods=2`,
			`key keyUp "Control" ControlLeft mods=0`,
		}},
		{"shift a", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Shift, "a"}}, []string{
			`key rawKeyDown "Shift" ShiftLeft mods=8`,
			`key keyDown "A" KeyA mods=8 text="A"`,
			`key keyUp "A" KeyA mods=8`,
			`key keyUp "Shift" ShiftLeft mods=0`,
		}},
		{"space", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Space"}}, []string{
			`key keyDown " " Space mods=0 text=" "`,
			`key keyUp " " Space mods=0`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &inputTab{}
			d := unitDisplay(f, DisplayConfig{})
			if err := d.Perform(t.Context(), screen.Mapped{Action: tt.a}); err != nil {
				t.Fatalf("Perform(%v) = %v", tt.a.LogValue(), err)
			}
			if diff := cmp.Diff(tt.want, f.sent); diff != "" {
				t.Errorf("Perform(%v) sent (-want +got):\n%s", tt.a.LogValue(), diff)
			}
		})
	}
}

func TestPerformRejects(t *testing.T) {
	tests := []struct {
		a    actions.Action
		want error
	}{
		{actions.Action{Kind: actions.Click, At: actions.Pt(math.Inf(1), 0), HasAt: true}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Click, HasAt: true, Button: 9}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Click, HasAt: true, Modifiers: actions.Chord{"a"}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"NoSuchKey"}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"a", actions.Control}}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Keypress}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Navigate}, actions.ErrInvalid},
		{actions.Action{Kind: actions.Zoom}, screen.ErrUnsupported},
	}
	for _, tt := range tests {
		f := &inputTab{}
		d := unitDisplay(f, DisplayConfig{})
		err := d.Perform(t.Context(), screen.Mapped{Action: tt.a})
		if !errors.Is(err, tt.want) {
			t.Errorf("Perform(%v) = %v, want %v", tt.a.LogValue(), err, tt.want)
		}
		if len(f.sent) != 0 {
			t.Errorf("Perform(%v) sent %q before failing", tt.a.LogValue(), f.sent)
		}
	}
	d := unitDisplay(&inputTab{}, DisplayConfig{})
	close(d.closed)
	if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Move, HasAt: true}}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform on a closed display = %v, want ErrGone", err)
	}
}
