package vnc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// dialFake connects a Display to a fake server. Call it inside a synctest
// bubble.
func dialFake(t *testing.T, opts fakeOptions, cfg Config) (*Display, *fakeServer) {
	t.Helper()
	conn, f := newFake(t, opts)
	d, err := newDisplay(t.Context(), conn, cfg.withDefaults("unix", "/fake"))
	if err != nil {
		t.Fatalf("newDisplay() = %v", err)
	}
	t.Cleanup(func() { d.Close() })
	synctest.Wait() // let the display ask for its next update
	// Dial put the pointer at the centre, and a capture would wait the
	// reaction time for its effects: let it pass (in synctest's time).
	time.Sleep(cfg.withDefaults("unix", "/fake").ReactionTime)
	return d, f
}

func TestVNCAuthResponse(t *testing.T) {
	// Computed with openssl enc -des-ecb -K 0e86cece8c4ccc2c (the bytes of
	// "pass1234", each with its bits reversed).
	challenge := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	want := []byte{0x34, 0x7f, 0xb6, 0x97, 0xaf, 0x65, 0x77, 0xeb, 0x59, 0xea, 0x23, 0xb5, 0x5c, 0x25, 0xa3, 0xff}
	got, err := vncAuthResponse(challenge, "pass1234")
	if err != nil || !bytes.Equal(got[:], want) {
		t.Errorf("vncAuthResponse(%x, %q) = %x, %v; want %x", challenge, "pass1234", got, err, want)
	}
	long, _ := vncAuthResponse(challenge, "pass1234 and more")
	if long != got {
		t.Errorf("vncAuthResponse(%q) = %x, want the response of its first 8 bytes %x", "pass1234 and more", long, got)
	}
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		name     string
		opts     fakeOptions
		password string
		wantErr  string // part of the error; "" means success
		auth     bool   // the error wraps ErrAuth
	}{
		{name: "3.8 none", opts: fakeOptions{}},
		{name: "3.7 none", opts: fakeOptions{version: "RFB 003.007\n"}},
		{name: "3.3 none", opts: fakeOptions{version: "RFB 003.003\n"}},
		{name: "3.5 is 3.3", opts: fakeOptions{version: "RFB 003.005\n"}},
		{name: "Apple 3.889", opts: fakeOptions{version: "RFB 003.889\n"}},
		{name: "3.8 vnc auth", opts: fakeOptions{security: []byte{secVNCAuth}, password: "pw"}, password: "pw"},
		{name: "3.7 vnc auth", opts: fakeOptions{version: "RFB 003.007\n", security: []byte{secVNCAuth}, password: "pw"}, password: "pw"},
		{name: "3.3 vnc auth", opts: fakeOptions{version: "RFB 003.003\n", security: []byte{secVNCAuth}, password: "pw"}, password: "pw"},
		{name: "prefers vnc auth with a password", opts: fakeOptions{security: []byte{secNone, secVNCAuth}, password: "pw"}, password: "pw"},
		{name: "none without a password", opts: fakeOptions{security: []byte{secVNCAuth, secNone}}},
		{name: "3.8 wrong password", opts: fakeOptions{security: []byte{secVNCAuth}, password: "pw"}, password: "px",
			wantErr: "refused the credentials: Authentication failed", auth: true},
		{name: "3.7 wrong password", opts: fakeOptions{version: "RFB 003.007\n", security: []byte{secVNCAuth}, password: "pw"}, password: "px",
			wantErr: "refused the credentials", auth: true},
		{name: "no password", opts: fakeOptions{security: []byte{secVNCAuth}, password: "pw"},
			wantErr: "requires a password", auth: true},
		{name: "3.3 no password", opts: fakeOptions{version: "RFB 003.003\n", security: []byte{secVNCAuth}},
			wantErr: "requires a password", auth: true},
		{name: "unknown security", opts: fakeOptions{security: []byte{16, 19}}, password: "pw",
			wantErr: "offers security Tight, VeNCrypt", auth: true},
		{name: "refused", opts: fakeOptions{refuse: "too many connections"}, wantErr: "refused the connection: too many connections"},
		{name: "3.3 refused", opts: fakeOptions{version: "RFB 003.003\n", refuse: "go away"}, wantErr: "refused the connection: go away"},
		{name: "not rfb", opts: fakeOptions{version: "HTTP/1.1 400"}, wantErr: "not an RFB server"},
		{name: "rfb 4", opts: fakeOptions{version: "RFB 004.000\n"}, wantErr: "unsupported RFB protocol version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn, f := newFake(t, tt.opts)
				d, err := newDisplay(t.Context(), conn, Config{Password: tt.password}.withDefaults("unix", "/fake"))
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrAuth) != tt.auth {
						t.Fatalf("newDisplay(%s, password %q) = %v, want an error containing %q (ErrAuth: %v)", tt.name, tt.password, err, tt.wantErr, tt.auth)
					}
					return
				}
				if err != nil {
					t.Fatalf("newDisplay(%s, password %q) = %v", tt.name, tt.password, err)
				}
				defer d.Close()
				synctest.Wait()
				want := []clientMsg{
					{Type: msgSetPixelFormat, Format: clientFormat},
					{Type: msgSetEncodings, Encodings: []Encoding{CopyRect, Raw, encDesktopSize, encCursor, encFence, encLEDState}},
					{Type: msgFramebufferUpdateRequest, Rect: image.Rect(0, 0, 64, 48)},
					{Type: msgFramebufferUpdateRequest, Incremental: true, Rect: image.Rect(0, 0, 64, 48)},
					{Type: msgPointerEvent, At: image.Pt(32, 24)}, // Dial takes the pointer
				}
				got := f.messages(true)
				if len(got) > 3 {
					// The reader's next update request and Dial's
					// pointer event go out concurrently.
					slices.SortFunc(got[3:], func(a, b clientMsg) int { return int(a.Type) - int(b.Type) })
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("client messages after the handshake (-want +got):\n%s", diff)
				}
				if f.shared != 1 {
					t.Errorf("ClientInit shared flag = %d, want 1", f.shared)
				}
				if d.Name() != "fake desktop" {
					t.Errorf("Name() = %q, want %q", d.Name(), "fake desktop")
				}
			})
		})
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name          string
		network, addr string
		cfg           Config
		encodings     []Encoding
		shared        byte
	}{
		{"unix socket", "unix", "/run/vnc.sock", Config{}, []Encoding{CopyRect, Raw}, 1},
		{"loopback", "tcp", "127.0.0.1:5900", Config{}, []Encoding{CopyRect, Raw}, 1},
		{"localhost", "tcp", "localhost:5900", Config{}, []Encoding{CopyRect, Raw}, 1},
		{"remote", "tcp", "10.1.2.3:5900", Config{}, []Encoding{CopyRect, ZRLE, Raw}, 1},
		{"chosen", "tcp", "10.1.2.3:5900", Config{Encodings: []Encoding{ZRLE}}, []Encoding{ZRLE}, 1},
		{"exclusive", "unix", "/s", Config{Exclusive: true}, []Encoding{CopyRect, Raw}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn, f := newFake(t, fakeOptions{})
				d, err := newDisplay(t.Context(), conn, tt.cfg.withDefaults(tt.network, tt.addr))
				if err != nil {
					t.Fatalf("newDisplay() = %v", err)
				}
				defer d.Close()
				got := f.messages(true)[1].Encodings
				if diff := cmp.Diff(append(tt.encodings, encDesktopSize, encCursor, encFence, encLEDState), got); diff != "" {
					t.Errorf("SetEncodings for %s %s (-want +got):\n%s", tt.network, tt.addr, diff)
				}
				if f.shared != tt.shared {
					t.Errorf("ClientInit shared flag = %d, want %d", f.shared, tt.shared)
				}
			})
		})
	}
	if err := (Config{Encodings: []Encoding{5}}).validate(); err == nil {
		t.Errorf("Config{Encodings: [Hextile]}.validate() = nil, want an error")
	}
}

// Shorthands for expected input events.
func ptr(buttons uint8, x, y int) clientMsg {
	return clientMsg{Type: msgPointerEvent, Buttons: buttons, At: image.Pt(x, y)}
}
func kdown(sym uint32) clientMsg { return clientMsg{Type: msgKeyEvent, Down: true, Keysym: sym} }
func kup(sym uint32) clientMsg   { return clientMsg{Type: msgKeyEvent, Keysym: sym} }

// Keysyms used below.
const (
	xkShift   = 0xffe1
	xkControl = 0xffe3
	xkAlt     = 0xffe9
	xkReturn  = 0xff0d
	xkTab     = 0xff09
)

func TestPerform(t *testing.T) {
	at := func(x, y float64) actions.Point { return actions.Pt(x, y) }
	tests := []struct {
		name string
		a    []actions.Action // performed in order; events of all are compared
		want []clientMsg
	}{
		{
			name: "click",
			a:    []actions.Action{{Kind: actions.Click, At: at(10.5, 20.9), HasAt: true}},
			want: []clientMsg{ptr(0, 10, 20), ptr(1, 10, 20), ptr(0, 10, 20)},
		},
		{
			name: "right and middle buttons",
			a: []actions.Action{
				{Kind: actions.Click, At: at(1, 1), HasAt: true, Button: actions.Right},
				{Kind: actions.Click, Button: actions.Middle},
			},
			want: []clientMsg{ptr(0, 1, 1), ptr(4, 1, 1), ptr(0, 1, 1), ptr(2, 1, 1), ptr(0, 1, 1)},
		},
		{
			name: "double and triple click",
			a: []actions.Action{
				{Kind: actions.DoubleClick, At: at(5, 5), HasAt: true},
				{Kind: actions.TripleClick, At: at(5, 5), HasAt: true},
			},
			want: []clientMsg{
				ptr(0, 5, 5), ptr(1, 5, 5), ptr(0, 5, 5), ptr(1, 5, 5), ptr(0, 5, 5),
				ptr(1, 5, 5), ptr(0, 5, 5), ptr(1, 5, 5), ptr(0, 5, 5), ptr(1, 5, 5), ptr(0, 5, 5),
			},
		},
		{
			name: "the far edge is the last pixel",
			a:    []actions.Action{{Kind: actions.Move, At: at(64, 48)}},
			want: []clientMsg{ptr(0, 63, 47)},
		},
		{
			name: "ctrl+click",
			a:    []actions.Action{{Kind: actions.Click, At: at(3, 4), HasAt: true, Modifiers: actions.Chord{actions.Control, actions.Shift}}},
			want: []clientMsg{kdown(xkControl), kdown(xkShift), ptr(0, 3, 4), ptr(1, 3, 4), ptr(0, 3, 4), kup(xkShift), kup(xkControl)},
		},
		{
			name: "press, move, release",
			a: []actions.Action{
				{Kind: actions.MouseDown, At: at(1, 2), HasAt: true},
				{Kind: actions.Move, At: at(30, 2)},
				{Kind: actions.MouseUp, At: at(30, 40), HasAt: true},
			},
			want: []clientMsg{ptr(0, 1, 2), ptr(1, 1, 2), ptr(1, 30, 2), ptr(1, 30, 40), ptr(0, 30, 40)},
		},
		{
			name: "mouse down where the pointer is",
			a: []actions.Action{
				{Kind: actions.Move, At: at(7, 8)},
				{Kind: actions.MouseDown, Button: actions.Right},
				{Kind: actions.MouseUp, Button: actions.Right},
			},
			want: []clientMsg{ptr(0, 7, 8), ptr(4, 7, 8), ptr(0, 7, 8)},
		},
		{
			name: "drag",
			a:    []actions.Action{{Kind: actions.Drag, Path: []actions.Point{at(0, 0), at(50, 0), at(50, 10)}}},
			want: []clientMsg{
				ptr(0, 0, 0), ptr(1, 0, 0),
				ptr(1, 16, 0), ptr(1, 33, 0), ptr(1, 50, 0), // 50 px in three steps of at most 20
				ptr(1, 50, 10),
				ptr(0, 50, 10),
			},
		},
		{
			name: "scroll",
			a: []actions.Action{
				{Kind: actions.Scroll, At: at(9, 9), DeltaY: 3 * DefaultWheelStep},
				{Kind: actions.Scroll, At: at(9, 9), DeltaY: -10, DeltaX: 60},
			},
			want: []clientMsg{
				ptr(0, 9, 9), ptr(16, 9, 9), ptr(0, 9, 9), ptr(16, 9, 9), ptr(0, 9, 9), ptr(16, 9, 9), ptr(0, 9, 9),
				ptr(8, 9, 9), ptr(0, 9, 9), ptr(64, 9, 9), ptr(0, 9, 9),
			},
		},
		{
			name: "scroll left with a button held",
			a: []actions.Action{
				{Kind: actions.MouseDown, At: at(2, 2), HasAt: true},
				{Kind: actions.Scroll, At: at(2, 2), DeltaX: -2 * DefaultWheelStep},
				{Kind: actions.MouseUp},
			},
			want: []clientMsg{ptr(0, 2, 2), ptr(1, 2, 2), ptr(33, 2, 2), ptr(1, 2, 2), ptr(33, 2, 2), ptr(1, 2, 2), ptr(0, 2, 2)},
		},
		{
			name: "keypress",
			a: []actions.Action{
				{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "c"}},
				{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}},
			},
			want: []clientMsg{kdown(xkControl), kdown('c'), kup('c'), kup(xkControl), kdown(xkReturn), kup(xkReturn)},
		},
		{
			name: "shift makes the shifted character",
			a: []actions.Action{
				{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "t"}},
				{Kind: actions.Keypress, Keys: actions.Chord{actions.Shift, "1"}},
			},
			want: []clientMsg{
				kdown(xkControl), kdown(xkShift), kdown('T'), kup('T'), kup(xkShift), kup(xkControl),
				kdown(xkShift), kdown('!'), kup('!'), kup(xkShift),
			},
		},
		{
			name: "hold modifiers alone",
			a:    []actions.Action{{Kind: actions.HoldKey, Keys: actions.Chord{actions.Alt}}},
			want: []clientMsg{kdown(xkAlt), kup(xkAlt)},
		},
		{
			name: "type",
			a:    []actions.Action{{Kind: actions.Type, Text: "Hi!\tok\r\n"}},
			want: []clientMsg{
				kdown(xkShift), kdown('H'), kup('H'), kup(xkShift),
				kdown('i'), kup('i'),
				kdown(xkShift), kdown('!'), kup('!'), kup(xkShift),
				kdown(xkTab), kup(xkTab),
				kdown('o'), kup('o'), kdown('k'), kup('k'),
				kdown(xkReturn), kup(xkReturn),
			},
		},
		{
			name: "type beyond US keys",
			a:    []actions.Action{{Kind: actions.Type, Text: "é€😀"}},
			want: []clientMsg{kdown(0xe9), kup(0xe9), kdown(0x10020ac), kup(0x10020ac), kdown(0x101f600), kup(0x101f600)},
		},
		{
			name: "type with shift held",
			a:    []actions.Action{{Kind: actions.Type, Text: "A", Modifiers: actions.Chord{actions.Shift}}},
			want: []clientMsg{kdown(xkShift), kdown('A'), kup('A'), kup(xkShift)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, f := dialFake(t, fakeOptions{}, Config{})
				f.input()
				for _, a := range tt.a {
					if err := d.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
						t.Fatalf("Perform(%v) = %v", a, err)
					}
				}
				synctest.Wait()
				if diff := cmp.Diff(tt.want, f.input()); diff != "" {
					t.Errorf("input events of %s (-want +got):\n%s", tt.name, diff)
				}
			})
		})
	}
}

func TestPerformErrors(t *testing.T) {
	tests := []struct {
		name string
		a    actions.Action
		want error
	}{
		{"navigate", actions.Action{Kind: actions.Navigate, URL: "https://example.com"}, screen.ErrUnsupported},
		{"go back", actions.Action{Kind: actions.GoBack}, screen.ErrUnsupported},
		{"go forward", actions.Action{Kind: actions.GoForward}, screen.ErrUnsupported},
		{"zoom", actions.Action{Kind: actions.Zoom}, screen.ErrUnsupported},
		{"forward button", actions.Action{Kind: actions.Click, Button: actions.Forward}, screen.ErrUnsupported},
		{"back button", actions.Action{Kind: actions.MouseDown, Button: actions.Back}, screen.ErrUnsupported},
		{"outside", actions.Action{Kind: actions.Click, At: actions.Pt(65, 1), HasAt: true}, screen.ErrOutOfBounds},
		{"negative", actions.Action{Kind: actions.Move, At: actions.Pt(-1, 1)}, screen.ErrOutOfBounds},
		{"drag outside", actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}, {X: 100, Y: 1}}}, screen.ErrOutOfBounds},
		{"nan", actions.Action{Kind: actions.Move, At: actions.Pt(math.NaN(), 1)}, actions.ErrInvalid},
		{"short drag", actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}}}, actions.ErrInvalid},
		{"huge scroll", actions.Action{Kind: actions.Scroll, At: actions.Pt(1, 1), DeltaY: 1e6}, actions.ErrInvalid},
		{"unknown key", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Hyper"}}, actions.ErrInvalid},
		{"two main keys", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"a", "b"}}, actions.ErrInvalid},
		{"empty chord", actions.Action{Kind: actions.Keypress}, actions.ErrInvalid},
		{"modifier that is not", actions.Action{Kind: actions.Click, Modifiers: actions.Chord{"a"}}, actions.ErrInvalid},
		{"control character", actions.Action{Kind: actions.Type, Text: "a\x07"}, actions.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, f := dialFake(t, fakeOptions{}, Config{})
				f.input()
				err := d.Perform(t.Context(), screen.Mapped{Action: tt.a})
				if !errors.Is(err, tt.want) {
					t.Errorf("Perform(%v) = %v, want an error wrapping %v", tt.a, err, tt.want)
				}
				synctest.Wait()
				// Nothing was sent, so a capture does not wait for effects.
				if shot, err := d.Capture(t.Context(), screen.CaptureOptions{}); err != nil || shot.Frame.Settle.Waited != 0 {
					t.Errorf("Capture() after Perform(%v) failed = settle %+v, %v; want no wait", tt.a, shot.Frame.Settle, err)
				}
				// Whatever was pressed is released.
				var buttons uint8
				held := map[uint32]bool{}
				for _, m := range f.input() {
					buttons = m.Buttons
					if m.Type == msgKeyEvent {
						held[m.Keysym] = m.Down
					}
				}
				for k, down := range held {
					if down {
						t.Errorf("Perform(%v) left key %#x down", tt.a, k)
					}
				}
				if buttons != 0 {
					t.Errorf("Perform(%v) left buttons %08b down", tt.a, buttons)
				}
			})
		})
	}
}

func TestHoldKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f := dialFake(t, fakeOptions{}, Config{})
		f.input()
		start := time.Now()
		a := actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift, "a"}, Duration: 2 * time.Second}
		if err := d.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
			t.Fatalf("Perform(%v) = %v", a, err)
		}
		if held := time.Since(start); held != 2*time.Second {
			t.Errorf("Perform(%v) took %v, want 2s", a, held)
		}
		synctest.Wait()
		want := []clientMsg{kdown(xkShift), kdown('A'), kup('A'), kup(xkShift)}
		if diff := cmp.Diff(want, f.input()); diff != "" {
			t.Errorf("input events (-want +got):\n%s", diff)
		}

		// Canceled while holding: the keys are released all the same.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := d.Perform(ctx, screen.Mapped{Action: a})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Perform(%v) with a 1s deadline = %v, want DeadlineExceeded", a, err)
		}
		synctest.Wait()
		if diff := cmp.Diff(want, f.input()); diff != "" {
			t.Errorf("input events of a canceled hold (-want +got):\n%s", diff)
		}
	})
}

func decode(t *testing.T, data []byte, format screen.Format) image.Image {
	t.Helper()
	var img image.Image
	var err error
	if format == screen.JPEG {
		img, err = jpeg.Decode(bytes.NewReader(data))
	} else {
		img, err = png.Decode(bytes.NewReader(data))
	}
	if err != nil {
		t.Fatalf("decode %s: %v", format, err)
	}
	return img
}

// toRGBA copies img to an RGBA image whose bounds start at (0,0).
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			out.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

func TestCapture(t *testing.T) {
	screenImg := testImage(150, 100)
	region := actions.Rect{Min: actions.Pt(64, 10), Max: actions.Pt(128, 60)}
	tests := []struct {
		name  string
		o     screen.CaptureOptions
		frame screen.Frame
		exact *image.RGBA // the image, pixel for pixel, if known
	}{
		{
			name:  "whole screen",
			o:     screen.CaptureOptions{},
			frame: screen.Frame{Clip: actions.Rect{Max: actions.Pt(150, 100)}, Capture: screen.Size{W: 150, H: 100}, Sent: screen.Size{W: 150, H: 100}, Format: screen.PNG},
			exact: screenImg,
		},
		{
			name:  "region",
			o:     screen.CaptureOptions{Region: region},
			frame: screen.Frame{Clip: region, Capture: screen.Size{W: 64, H: 50}, Sent: screen.Size{W: 64, H: 50}, Format: screen.PNG},
			exact: toRGBA(screenImg.SubImage(image.Rect(64, 10, 128, 60))),
		},
		{
			name:  "scaled",
			o:     screen.CaptureOptions{Size: screen.Size{W: 75, H: 50}},
			frame: screen.Frame{Clip: actions.Rect{Max: actions.Pt(150, 100)}, Capture: screen.Size{W: 150, H: 100}, Sent: screen.Size{W: 75, H: 50}, Format: screen.PNG},
		},
		{
			name:  "stretched",
			o:     screen.CaptureOptions{Size: screen.Size{W: 100, H: 100}},
			frame: screen.Frame{Clip: actions.Rect{Max: actions.Pt(150, 100)}, Capture: screen.Size{W: 150, H: 100}, Sent: screen.Size{W: 100, H: 100}, Format: screen.PNG},
		},
		{
			name:  "region enlarged as JPEG",
			o:     screen.CaptureOptions{Region: region, Size: screen.Size{W: 256, H: 200}, Format: screen.JPEG, Quality: 90},
			frame: screen.Frame{Clip: region, Capture: screen.Size{W: 64, H: 50}, Sent: screen.Size{W: 256, H: 200}, Format: screen.JPEG},
		},
		{
			name: "fractional region",
			o:    screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(0.5, 0.25), Max: actions.Pt(32.5, 16.25)}},
			frame: screen.Frame{Clip: actions.Rect{Min: actions.Pt(0.5, 0.25), Max: actions.Pt(32.5, 16.25)},
				Capture: screen.Size{W: 32, H: 16}, Sent: screen.Size{W: 32, H: 16}, Format: screen.PNG},
		},
		{
			name:  "region clamped to the screen",
			o:     screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(-10, 90), Max: actions.Pt(20, 200)}},
			frame: screen.Frame{Clip: actions.Rect{Min: actions.Pt(0, 90), Max: actions.Pt(20, 100)}, Capture: screen.Size{W: 20, H: 10}, Sent: screen.Size{W: 20, H: 10}, Format: screen.PNG},
			exact: toRGBA(screenImg.SubImage(image.Rect(0, 90, 20, 100))),
		},
	}
	synctest.Test(t, func(t *testing.T) {
		d, f := dialFake(t, fakeOptions{size: image.Pt(150, 100)}, Config{})
		if err := f.send(updateMsg(rawRect(screenImg, screenImg.Rect))); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for i, tt := range tests {
			func() {
				shot, err := d.Capture(t.Context(), tt.o)
				if err != nil {
					t.Errorf("%s: Capture(%+v) = %v", tt.name, tt.o, err)
					return
				}
				want := tt.frame
				want.ID = []string{"f0001", "f0002", "f0003", "f0004", "f0005", "f0006", "f0007"}[i]
				want.Viewport = screen.Size{W: 150, H: 100}
				want.DPR = 1
				if diff := cmp.Diff(want, shot.Frame, cmpopts.IgnoreFields(screen.Frame{}, "Time", "Settle")); diff != "" {
					t.Errorf("Capture(%+v) frame (-want +got):\n%s", tt.o, diff)
				}
				img := decode(t, shot.Data, want.Format)
				if got := img.Bounds().Size(); got != image.Pt(want.Sent.W, want.Sent.H) {
					t.Errorf("Capture(%+v) image is %v, want %dx%d", tt.o, got, want.Sent.W, want.Sent.H)
				}
				if tt.exact != nil {
					if diff := diffImages(tt.exact, toRGBA(img)); diff != "" {
						t.Errorf("Capture(%+v): %s", tt.o, diff)
					}
				}
			}()
		}
	})
}

func TestCaptureScaledColours(t *testing.T) {
	// Four quadrants of solid colour keep their colours away from the
	// edges, whatever the scale.
	colours := []color.RGBA{{255, 0, 0, 255}, {0, 200, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}
	synctest.Test(t, func(t *testing.T) {
		d, f := dialFake(t, fakeOptions{size: image.Pt(200, 100)}, Config{})
		for i, c := range colours {
			f.paint(image.Rect(100*(i%2), 50*(i/2), 100*(i%2)+100, 50*(i/2)+50), c)
		}
		synctest.Wait()
		for _, size := range []screen.Size{{W: 100, H: 50}, {W: 160, H: 80}, {W: 400, H: 200}, {W: 37, H: 91}} {
			shot, err := d.Capture(t.Context(), screen.CaptureOptions{Size: size})
			if err != nil {
				t.Fatalf("Capture(size %v) = %v", size, err)
			}
			img := decode(t, shot.Data, screen.PNG)
			for i, c := range colours {
				// The middle of each quadrant, in image pixels.
				x := (float64(100*(i%2)) + 50) * float64(size.W) / 200
				y := (float64(50*(i/2)) + 25) * float64(size.H) / 100
				if got := color.RGBAModel.Convert(img.At(int(x), int(y))).(color.RGBA); got != c {
					t.Errorf("Capture(size %v) pixel (%d,%d) = %v, want %v", size, int(x), int(y), got, c)
				}
			}
		}
	})
}

func TestCaptureErrors(t *testing.T) {
	tests := []struct {
		name string
		o    screen.CaptureOptions
	}{
		{"format", screen.CaptureOptions{Format: "gif"}},
		{"quality", screen.CaptureOptions{Format: screen.JPEG, Quality: 101}},
		{"negative size", screen.CaptureOptions{Size: screen.Size{W: -1, H: 10}}},
		{"half a size", screen.CaptureOptions{Size: screen.Size{W: 10}}},
		{"huge size", screen.CaptureOptions{Size: screen.Size{W: 20000, H: 10}}},
		{"region outside", screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(70, 0), Max: actions.Pt(90, 10)}}},
		{"region nan", screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(math.NaN(), 0), Max: actions.Pt(9, 10)}}},
	}
	synctest.Test(t, func(t *testing.T) {
		d, _ := dialFake(t, fakeOptions{}, Config{})
		for _, tt := range tests {
			if _, err := d.Capture(t.Context(), tt.o); !errors.Is(err, actions.ErrInvalid) {
				t.Errorf("Capture(%+v) = %v, want an error wrapping actions.ErrInvalid", tt.o, err)
			}
		}
	})
}

func TestSettle(t *testing.T) {
	red := color.RGBA{255, 0, 0, 255}
	click := screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(5, 5), HasAt: true}}
	tests := []struct {
		name    string
		input   bool          // perform a click first
		paintAt time.Duration // the server paints this long after the start; 0 means never
		every   time.Duration // ... and again every so often, for ever
		timeout time.Duration // CaptureOptions.SettleTimeout
		want    screen.Settle
	}{
		{name: "nothing happened", want: screen.Settle{}},
		{name: "input without an effect", input: true, want: screen.Settle{Waited: DefaultReactionTime}},
		{name: "input with an effect", input: true, paintAt: 30 * time.Millisecond, want: screen.Settle{Waited: 30*time.Millisecond + DefaultQuietWindow}},
		{name: "input with a late effect", input: true, paintAt: 140 * time.Millisecond, want: screen.Settle{Waited: 140*time.Millisecond + DefaultQuietWindow}},
		{name: "an effect without input", paintAt: 10 * time.Millisecond, want: screen.Settle{}},
		{
			name: "never quiet", input: true, paintAt: 10 * time.Millisecond, every: 20 * time.Millisecond, timeout: 500 * time.Millisecond,
			want: screen.Settle{Waited: 500 * time.Millisecond, TimedOut: true, Reason: "the screen kept changing (25 updates in 500ms)"},
		},
		{name: "no wait", input: true, timeout: -1, want: screen.Settle{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, f := dialFake(t, fakeOptions{}, Config{})
				time.Sleep(time.Second) // long after the first update
				if tt.input {
					if err := d.Perform(t.Context(), click); err != nil {
						t.Fatalf("Perform(%v) = %v", click.Action, err)
					}
				}
				ctx, stop := context.WithCancel(t.Context())
				var painter sync.WaitGroup
				defer painter.Wait()
				defer stop()
				if tt.paintAt > 0 {
					painter.Go(func() {
						time.Sleep(tt.paintAt)
						for {
							if f.paint(image.Rect(0, 0, 8, 8), red) != nil || tt.every == 0 {
								return
							}
							select {
							case <-ctx.Done():
								return
							case <-time.After(tt.every):
							}
						}
					})
				}
				synctest.Wait()
				shot, err := d.Capture(t.Context(), screen.CaptureOptions{SettleTimeout: tt.timeout})
				if err != nil {
					t.Fatalf("Capture() = %v", err)
				}
				if diff := cmp.Diff(tt.want, shot.Frame.Settle); diff != "" {
					t.Errorf("Capture() settle (-want +got):\n%s", diff)
				}
				if tt.paintAt > 0 && tt.paintAt <= tt.want.Waited {
					img := decode(t, shot.Data, screen.PNG)
					if got := color.RGBAModel.Convert(img.At(1, 1)); got != red {
						t.Errorf("Capture() after the server painted red: pixel (1,1) = %v", got)
					}
				}
			})
		})
	}
}

func TestDesktopSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f := dialFake(t, fakeOptions{}, Config{})
		big := testImage(100, 80)
		f.mu.Lock()
		f.img = big // what the fake sends when the client asks for the whole screen
		f.mu.Unlock()
		if err := f.send(updateMsg(desktopSizeMsg(100, 80))); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		if shot.Frame.Viewport != (screen.Size{W: 100, H: 80}) || shot.Frame.Sent != (screen.Size{W: 100, H: 80}) {
			t.Errorf("Capture() after a resize to 100x80: Viewport %v, Sent %v", shot.Frame.Viewport, shot.Frame.Sent)
		}
		if diff := cmp.Diff([]string{"the screen size changed to 100x80"}, shot.Events); diff != "" {
			t.Errorf("Capture() events (-want +got):\n%s", diff)
		}
		if diff := diffImages(big, toRGBA(decode(t, shot.Data, screen.PNG))); diff != "" {
			t.Errorf("Capture() after a resize: %s", diff)
		}
		// After a resize the client asks for the whole screen.
		var reqs []clientMsg
		for _, m := range f.messages(true) {
			if m.Type == msgFramebufferUpdateRequest {
				reqs = append(reqs, m)
			}
		}
		wantReqs := []clientMsg{
			{Type: msgFramebufferUpdateRequest, Rect: image.Rect(0, 0, 64, 48)},
			{Type: msgFramebufferUpdateRequest, Incremental: true, Rect: image.Rect(0, 0, 64, 48)},
			{Type: msgFramebufferUpdateRequest, Rect: image.Rect(0, 0, 100, 80)},
			{Type: msgFramebufferUpdateRequest, Incremental: true, Rect: image.Rect(0, 0, 100, 80)},
		}
		if diff := cmp.Diff(wantReqs, reqs); diff != "" {
			t.Errorf("update requests (-want +got):\n%s", diff)
		}
		shot, err = d.Capture(t.Context(), screen.CaptureOptions{})
		if err != nil || len(shot.Events) != 0 {
			t.Errorf("second Capture() = events %q, %v; want no events", shot.Events, err)
		}
		// A point of the old size that is outside the new one, and one inside.
		if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Move, At: actions.Pt(99, 79)}}); err != nil {
			t.Errorf("Perform(move to (99,79)) = %v", err)
		}
	})
}

func TestGone(t *testing.T) {
	move := screen.Mapped{Action: actions.Action{Kind: actions.Move, At: actions.Pt(1, 1)}}
	t.Run("server closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d, f := dialFake(t, fakeOptions{}, Config{})
			f.conn.Close()
			synctest.Wait()
			if _, err := d.Capture(t.Context(), screen.CaptureOptions{}); !errors.Is(err, screen.ErrGone) {
				t.Errorf("Capture() after the server closed = %v, want ErrGone", err)
			}
			if err := d.Perform(t.Context(), move); !errors.Is(err, screen.ErrGone) {
				t.Errorf("Perform() after the server closed = %v, want ErrGone", err)
			}
		})
	})
	t.Run("bad message", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d, f := dialFake(t, fakeOptions{}, Config{})
			f.send([]byte{99})
			synctest.Wait()
			_, err := d.Capture(t.Context(), screen.CaptureOptions{})
			if !errors.Is(err, screen.ErrGone) || !strings.Contains(err.Error(), "unknown server message type 99") {
				t.Errorf("Capture() after a bad message = %v, want ErrGone saying why", err)
			}
		})
	})
	t.Run("closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d, f := dialFake(t, fakeOptions{}, Config{})
			d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.MouseDown, At: actions.Pt(3, 3), HasAt: true}})
			if err := d.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
			if err := d.Close(); err != nil {
				t.Errorf("second Close() = %v", err)
			}
			if err := d.Perform(t.Context(), move); !errors.Is(err, screen.ErrGone) {
				t.Errorf("Perform() after Close = %v, want ErrGone", err)
			}
			synctest.Wait()
			in := f.input()
			if len(in) == 0 || in[len(in)-1].Buttons != 0 {
				t.Errorf("input events until Close %v: want the button released last", in)
			}
		})
	})
	t.Run("no first update", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			conn, _ := newFake(t, fakeOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := newDisplay(ctx, conn, Config{}.withDefaults("unix", "")); !errors.Is(err, context.Canceled) {
				t.Errorf("newDisplay(canceled ctx) = %v, want context.Canceled", err)
			}
		})
	})
}

func TestCaptureReusesEncoding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f := dialFake(t, fakeOptions{}, Config{})
		capture := func(o screen.CaptureOptions) screen.Shot {
			t.Helper()
			shot, err := d.Capture(t.Context(), o)
			if err != nil {
				t.Fatalf("Capture(%+v) = %v", o, err)
			}
			return shot
		}
		same := func(a, b screen.Shot) bool { return &a.Data[0] == &b.Data[0] }
		first := capture(screen.CaptureOptions{})
		second := capture(screen.CaptureOptions{})
		if !same(first, second) || first.Frame.ID == second.Frame.ID {
			t.Errorf("two captures of an unchanged screen: same data %v, IDs %s and %s; want the same data and two IDs",
				same(first, second), first.Frame.ID, second.Frame.ID)
		}
		jpg := capture(screen.CaptureOptions{Format: screen.JPEG})
		if same(second, jpg) {
			t.Errorf("a JPEG capture reused the PNG capture's data")
		}
		f.paint(image.Rect(0, 0, 4, 4), color.RGBA{1, 2, 3, 255})
		synctest.Wait()
		third := capture(screen.CaptureOptions{Format: screen.JPEG})
		if same(jpg, third) {
			t.Errorf("a capture after the screen changed reused the previous data")
		}
	})
}

// strs formats client messages for a diff.
func strs(ms []clientMsg) []string {
	var s []string
	for _, m := range ms {
		s = append(s, m.String())
	}
	return s
}

func TestTakeOver(t *testing.T) {
	tests := []struct {
		name string
		leds *int // nil: the server does not tell
		want []string
	}{
		{"no LED state", nil, []string{"pointer 00000000 at (32,24)", "fence request 0x1"}},
		{"NumLock on", ledsOf(ledNumLock), []string{"pointer 00000000 at (32,24)", "fence request 0x1"}},
		{"NumLock off", ledsOf(0), []string{"pointer 00000000 at (32,24)", "key down 0xff7f", "key up 0xff7f", "fence request 0x1"}},
		{"CapsLock on", ledsOf(ledNumLock | ledCapsLock), []string{"pointer 00000000 at (32,24)", "key down 0xffe5", "key up 0xffe5", "fence request 0x1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, f := dialFake(t, fakeOptions{fences: true, leds: tt.leds}, Config{})
				got := f.take(msgPointerEvent, msgKeyEvent, msgClientFence)
				// The answer to the server's own fence comes first.
				if len(got) == 0 || got[0].String() != "fence answer 0x1" {
					t.Errorf("Dial: first messages %v, want an answer to the server's fence first", strs(got))
				} else {
					got = got[1:]
				}
				if diff := cmp.Diff(tt.want, strs(got)); diff != "" {
					t.Errorf("Dial: input (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func ledsOf(v int) *int { return &v }

func TestPacing(t *testing.T) {
	at := actions.Pt(10.5, 10.5)
	tests := []struct {
		name string
		leds int // the LED state the server tells after Dial
		a    actions.Action
		want []string
	}{
		{"double click", ledNumLock, actions.Action{Kind: actions.DoubleClick, At: at, HasAt: true}, []string{
			"pointer 00000000 at (10,10)", "pointer 00000001 at (10,10)", "pointer 00000000 at (10,10)",
			"fence request 0x1", // then clickGap
			"pointer 00000001 at (10,10)", "pointer 00000000 at (10,10)",
			"fence request 0x1", // Perform returns once the server has it
		}},
		{"drag", ledNumLock, actions.Action{Kind: actions.Drag, Path: []actions.Point{at, actions.Pt(30.5, 10.5), actions.Pt(30.5, 20.5)}}, []string{
			"pointer 00000000 at (10,10)", "pointer 00000001 at (10,10)",
			"fence request 0x1", // then dragDwell
			"pointer 00000001 at (30,10)",
			"fence request 0x1",
			"pointer 00000001 at (30,20)",
			"fence request 0x1",
			"pointer 00000000 at (30,20)",
			"fence request 0x1",
		}},
		{"keypad key with NumLock off", 0, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Numpad5"}}, []string{
			"key down 0xff7f", "key up 0xff7f", "key down 0xffb5", "key up 0xffb5", "fence request 0x1",
		}},
		{"NumLock pressed itself", 0, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"NumLock"}}, []string{
			"key down 0xff7f", "key up 0xff7f", "fence request 0x1",
		}},
		{"typing with CapsLock on", ledNumLock | ledCapsLock, actions.Action{Kind: actions.Type, Text: "a"}, []string{
			"key down 0xffe5", "key up 0xffe5", "key down 0x61", "key up 0x61", "fence request 0x1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, f := dialFake(t, fakeOptions{fences: true, leds: ledsOf(ledNumLock)}, Config{})
				if err := f.send(updateMsg(append(rectHeader(image.Rectangle{}, encLEDState), byte(tt.leds)))); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				f.take()
				start := time.Now()
				if err := d.Perform(t.Context(), screen.Mapped{Action: tt.a}); err != nil {
					t.Fatalf("Perform(%v) = %v", tt.a, err)
				}
				took := time.Since(start)
				if diff := cmp.Diff(tt.want, strs(f.take(msgPointerEvent, msgKeyEvent, msgClientFence))); diff != "" {
					t.Errorf("Perform(%v): messages (-want +got):\n%s", tt.a, diff)
				}
				var want time.Duration
				switch tt.a.Kind {
				case actions.DoubleClick:
					want = clickGap
				case actions.Drag:
					want = 3 * dragDwell
				}
				if took != want {
					t.Errorf("Perform(%v) took %v, want %v", tt.a, took, want)
				}
			})
		})
	}
}

func TestSettleAdapts(t *testing.T) {
	red := color.RGBA{255, 0, 0, 255}
	click := screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(5, 5), HasAt: true}}
	// paint paints after each of delays, one after the other.
	paint := func(t *testing.T, f *fakeServer, delays ...time.Duration) {
		for _, d := range delays {
			time.Sleep(d)
			if err := f.paint(image.Rect(0, 0, 8, 8), red); err != nil {
				t.Errorf("paint: %v", err)
				return
			}
		}
	}
	capture := func(t *testing.T, d *Display) screen.Settle {
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		return shot.Frame.Settle
	}
	perform := func(t *testing.T, d *Display) {
		if err := d.Perform(t.Context(), click); err != nil {
			t.Fatalf("Perform(%v) = %v", click.Action, err)
		}
	}

	t.Run("an animation with frames far apart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d, f := dialFake(t, fakeOptions{}, Config{})
			frames := []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
			perform(t, d)
			var wg sync.WaitGroup
			wg.Go(func() { paint(t, f, frames...) })
			// The first gap of 100 ms is longer than the quiet window.
			if got, want := capture(t, d), 10*time.Millisecond+DefaultQuietWindow; got.Waited != want {
				t.Errorf("Capture() during the first animation: settle %+v, want a wait of %v", got, want)
			}
			wg.Wait()
			// Once the desktop has drawn frames 100 ms apart, the screen
			// is quiet 200 ms after the last frame, not DefaultQuietWindow
			// after the first.
			perform(t, d)
			wg.Go(func() { paint(t, f, frames...) })
			if got, want := capture(t, d), 310*time.Millisecond+200*time.Millisecond; got.Waited != want || got.TimedOut {
				t.Errorf("Capture() during the second animation: settle %+v, want a wait of %v", got, want)
			}
			wg.Wait()
		})
	})

	t.Run("a desktop that reacts late", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d, f := dialFake(t, fakeOptions{}, Config{})
			perform(t, d)
			var wg sync.WaitGroup
			wg.Go(func() { paint(t, f, 280*time.Millisecond) })
			if got, want := capture(t, d), 280*time.Millisecond+DefaultQuietWindow; got.Waited != want {
				t.Errorf("Capture() after a reaction in 280 ms: settle %+v, want a wait of %v", got, want)
			}
			wg.Wait()
			// The next input that changes nothing is waited for twice
			// the latest reaction.
			perform(t, d)
			if got, want := capture(t, d), 560*time.Millisecond; got.Waited != want {
				t.Errorf("Capture() after an input without effect: settle %+v, want a wait of %v", got, want)
			}
		})
	})
}
