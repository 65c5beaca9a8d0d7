package vnc

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
)

// This file is an in-process RFB server for tests, and encoders that make
// the server messages it sends.

// fakeOptions configures a fakeServer.
type fakeOptions struct {
	version  string // ProtocolVersion to send; default "RFB 003.008\n"
	security []byte // security types offered; default None
	password string // the password VNC authentication accepts
	refuse   string // if set, refuse the connection with this reason
	size     image.Point
	fill     color.RGBA // the initial screen
	// fences makes the server do fences, as TigerVNC does: it sends a
	// fence request once the client declares Fence, and answers the
	// client's.
	fences bool
	// leds, if not nil, is the LED state the server sends a client that
	// declares LEDState.
	leds *int
}

// fakeServer serves one client on one end of a net.Pipe. It answers a
// non-incremental FramebufferUpdateRequest with a Raw update of img and
// records every other client message.
type fakeServer struct {
	conn net.Conn
	opts fakeOptions
	zrle zrleEncoder

	mu     sync.Mutex
	img    *image.RGBA
	msgs   []clientMsg
	shared byte  // ClientInit's shared flag
	err    error // why serving stopped
	done   chan struct{}

	replies chan []byte // full updates that answer requests
}

// clientMsg is one client-to-server message, as the fake server read it.
type clientMsg struct {
	Type        byte
	Format      pixelFormat     // SetPixelFormat
	Encodings   []Encoding      // SetEncodings
	Incremental bool            // FramebufferUpdateRequest
	Rect        image.Rectangle // FramebufferUpdateRequest
	Down        bool            // KeyEvent
	Keysym      uint32          // KeyEvent
	Buttons     uint8           // PointerEvent
	At          image.Point     // PointerEvent
	Flags       uint32          // ClientFence
	Payload     []byte          // ClientFence
}

func (m clientMsg) String() string {
	switch m.Type {
	case msgKeyEvent:
		if m.Down {
			return fmt.Sprintf("key down %#x", m.Keysym)
		}
		return fmt.Sprintf("key up %#x", m.Keysym)
	case msgPointerEvent:
		return fmt.Sprintf("pointer %08b at %v", m.Buttons, m.At)
	case msgFramebufferUpdateRequest:
		return fmt.Sprintf("update request incremental=%v %v", m.Incremental, m.Rect)
	case msgClientFence:
		if m.Flags&fenceRequest != 0 {
			return fmt.Sprintf("fence request %#x", m.Flags&^fenceRequest)
		}
		return fmt.Sprintf("fence answer %#x", m.Flags)
	case msgSetEncodings:
		return fmt.Sprintf("encodings %v", m.Encodings)
	}
	return fmt.Sprintf("message %d", m.Type)
}

// newFake starts a fake server and returns the client's end of the pipe.
func newFake(t testing.TB, opts fakeOptions) (net.Conn, *fakeServer) {
	t.Helper()
	c, s := net.Pipe()
	f := startFake(s, opts)
	t.Cleanup(func() {
		c.Close()
		s.Close()
		<-f.done
	})
	return c, f
}

// startFake serves the client at the other end of conn until the
// connection ends; then f.done is closed.
func startFake(conn net.Conn, opts fakeOptions) *fakeServer {
	if opts.version == "" {
		opts.version = "RFB 003.008\n"
	}
	if opts.security == nil {
		opts.security = []byte{secNone}
	}
	if opts.size == (image.Point{}) {
		opts.size = image.Pt(64, 48)
	}
	f := &fakeServer{conn: conn, opts: opts, img: image.NewRGBA(image.Rectangle{Max: opts.size}), done: make(chan struct{}), replies: make(chan []byte, 16)}
	fillRect(f.img, f.img.Rect, opts.fill)
	go f.serve()
	return f
}

func (f *fakeServer) serve() {
	defer close(f.done)
	replied := make(chan struct{})
	go func() {
		f.reply()
		close(replied)
	}()
	defer func() {
		close(f.replies)
		<-replied
	}()
	err := f.run()
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	f.conn.Close()
}

func (f *fakeServer) run() error {
	r := bufio.NewReader(f.conn)
	w := f.conn
	o := f.opts
	if _, err := io.WriteString(w, o.version); err != nil {
		return err
	}
	var v [12]byte
	if _, err := io.ReadFull(r, v[:]); err != nil {
		return err
	}
	old := string(v[:]) != "RFB 003.008\n"
	sec := byte(secNone)
	if string(v[:]) == "RFB 003.003\n" {
		if o.refuse != "" {
			w.Write(binary.BigEndian.AppendUint32(nil, 0))
			w.Write(lenString(o.refuse))
			return nil
		}
		sec = o.security[0]
		w.Write(binary.BigEndian.AppendUint32(nil, uint32(sec)))
	} else {
		if o.refuse != "" {
			w.Write(append([]byte{0}, lenString(o.refuse)...))
			return nil
		}
		w.Write(append([]byte{byte(len(o.security))}, o.security...))
		b, err := r.ReadByte()
		if err != nil {
			return err
		}
		if !slices.Contains(o.security, b) {
			return fmt.Errorf("client chose security %d, which was not offered", b)
		}
		sec = b
	}
	ok := true
	if sec == secVNCAuth {
		challenge := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		w.Write(challenge[:])
		var resp [16]byte
		if _, err := io.ReadFull(r, resp[:]); err != nil {
			return err
		}
		want, _ := vncAuthResponse(challenge, o.password)
		ok = resp == want
	}
	if !old || sec != secNone {
		if !ok {
			w.Write(binary.BigEndian.AppendUint32(nil, 1))
			if !old {
				w.Write(lenString("Authentication failed"))
			}
			return nil
		}
		w.Write(binary.BigEndian.AppendUint32(nil, 0))
	}
	shared, err := r.ReadByte()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.shared = shared
	f.mu.Unlock()
	si := binary.BigEndian.AppendUint16(nil, uint16(o.size.X))
	si = binary.BigEndian.AppendUint16(si, uint16(o.size.Y))
	// The server's own format, which the client replaces: 32 bpp BGRX.
	si = pixelFormat{BPP: 32, Depth: 24, TrueColor: true, RedMax: 255, GreenMax: 255, BlueMax: 255, RedShift: 16, GreenShift: 8}.append(si)
	si = append(si, lenString("fake desktop")...)
	if _, err := w.Write(si); err != nil {
		return err
	}
	for {
		m, err := readClientMsg(r)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.msgs = append(f.msgs, m)
		img := f.img
		f.mu.Unlock()
		if m.Type == msgSetEncodings && o.fences && slices.Contains(m.Encodings, encFence) {
			f.replies <- fenceMsg(fenceRequest|fenceBlockBefore, []byte{0})
		}
		if m.Type == msgSetEncodings && o.leds != nil && slices.Contains(m.Encodings, encLEDState) {
			f.replies <- updateMsg(append(rectHeader(image.Rectangle{}, encLEDState), byte(*o.leds)))
		}
		if m.Type == msgClientFence && m.Flags&fenceRequest != 0 {
			f.replies <- fenceMsg(m.Flags&fenceBlockBefore, m.Payload)
		}
		if m.Type == msgFramebufferUpdateRequest && !m.Incremental {
			// Answer from another goroutine: a net.Pipe has no buffer,
			// and the client may be writing its next message while this
			// one would be writing to it.
			f.replies <- updateMsg(rawRect(img, img.Rect))
		}
	}
}

// reply writes the answers to update requests until the connection ends.
func (f *fakeServer) reply() {
	for msg := range f.replies {
		if _, err := f.conn.Write(msg); err != nil {
			for range f.replies {
			}
			return
		}
	}
}

func readClientMsg(r *bufio.Reader) (clientMsg, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return clientMsg{}, err
	}
	m := clientMsg{Type: typ}
	read := func(n int) []byte {
		b := make([]byte, n)
		if _, e := io.ReadFull(r, b); e != nil && err == nil {
			err = e
		}
		return b
	}
	switch typ {
	case msgSetPixelFormat:
		b := read(19)[3:]
		m.Format = pixelFormat{
			BPP: b[0], Depth: b[1], BigEndian: b[2] != 0, TrueColor: b[3] != 0,
			RedMax: binary.BigEndian.Uint16(b[4:]), GreenMax: binary.BigEndian.Uint16(b[6:]), BlueMax: binary.BigEndian.Uint16(b[8:]),
			RedShift: b[10], GreenShift: b[11], BlueShift: b[12],
		}
	case msgSetEncodings:
		b := read(3)
		for _, e := range slices.Collect(chunks(read(4*int(binary.BigEndian.Uint16(b[1:]))), 4)) {
			m.Encodings = append(m.Encodings, Encoding(int32(binary.BigEndian.Uint32(e))))
		}
	case msgFramebufferUpdateRequest:
		b := read(9)
		m.Incremental = b[0] != 0
		x, y := int(binary.BigEndian.Uint16(b[1:])), int(binary.BigEndian.Uint16(b[3:]))
		m.Rect = image.Rect(x, y, x+int(binary.BigEndian.Uint16(b[5:])), y+int(binary.BigEndian.Uint16(b[7:])))
	case msgKeyEvent:
		b := read(7)
		m.Down = b[0] != 0
		m.Keysym = binary.BigEndian.Uint32(b[3:])
	case msgPointerEvent:
		b := read(5)
		m.Buttons = b[0]
		m.At = image.Pt(int(binary.BigEndian.Uint16(b[1:])), int(binary.BigEndian.Uint16(b[3:])))
	case msgClientFence:
		b := read(8)
		m.Flags = binary.BigEndian.Uint32(b[3:])
		m.Payload = read(int(b[7]))
	default:
		return m, fmt.Errorf("unexpected client message type %d", typ)
	}
	return m, err
}

func chunks(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) >= n {
			if !yield(b[:n]) {
				return
			}
			b = b[n:]
		}
	}
}

// messages returns the client messages read so far, less update requests
// unless requests is set.
func (f *fakeServer) messages(requests bool) []clientMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ms []clientMsg
	for _, m := range f.msgs {
		if requests || m.Type != msgFramebufferUpdateRequest {
			ms = append(ms, m)
		}
	}
	return ms
}

// input returns the key and pointer events read so far, and forgets them.
func (f *fakeServer) input() []clientMsg {
	return f.take(msgKeyEvent, msgPointerEvent)
}

// take returns the messages of the given types read so far, and forgets
// all messages.
func (f *fakeServer) take(types ...byte) []clientMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ms []clientMsg
	for _, m := range f.msgs {
		if slices.Contains(types, m.Type) {
			ms = append(ms, m)
		}
	}
	f.msgs = nil
	return ms
}

// send writes server messages to the client.
func (f *fakeServer) send(msgs ...[]byte) error {
	for _, m := range msgs {
		if _, err := f.conn.Write(m); err != nil {
			return err
		}
	}
	return nil
}

// paint draws c over r of the server's screen and sends the change as a
// Raw update.
func (f *fakeServer) paint(r image.Rectangle, c color.RGBA) error {
	f.mu.Lock()
	fillRect(f.img, r, c)
	msg := updateMsg(rawRect(f.img, r))
	f.mu.Unlock()
	return f.send(msg)
}

func fillRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func lenString(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

// Server message encoders.

// updateMsg makes a FramebufferUpdate of encoded rectangles.
func updateMsg(rects ...[]byte) []byte {
	b := []byte{msgFramebufferUpdate, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(len(rects)))
	for _, r := range rects {
		b = append(b, r...)
	}
	return b
}

func rectHeader(r image.Rectangle, e Encoding) []byte {
	var b []byte
	for _, v := range [...]int{r.Min.X, r.Min.Y, r.Dx(), r.Dy()} {
		b = binary.BigEndian.AppendUint16(b, uint16(v))
	}
	return binary.BigEndian.AppendUint32(b, uint32(e))
}

// rawRect encodes r of img as Raw pixels in the client's format (R, G, B,
// then a byte the client ignores).
func rawRect(img *image.RGBA, r image.Rectangle) []byte {
	b := rectHeader(r, Raw)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := img.RGBAAt(x, y)
			b = append(b, c.R, c.G, c.B, 0x5a)
		}
	}
	return b
}

func copyRectMsg(r image.Rectangle, src image.Point) []byte {
	b := rectHeader(r, CopyRect)
	b = binary.BigEndian.AppendUint16(b, uint16(src.X))
	return binary.BigEndian.AppendUint16(b, uint16(src.Y))
}

func desktopSizeMsg(w, h int) []byte {
	return rectHeader(image.Rect(0, 0, w, h), encDesktopSize)
}

// zrleEncoder encodes ZRLE rectangles with one zlib stream, as a server
// does for a connection.
type zrleEncoder struct {
	buf bytes.Buffer
	zw  *zlib.Writer
}

// Tile subencodings the encoder can be told to use.
const (
	tileRaw        = 0
	tileSolid      = 1
	tilePacked     = 2 // 2 to 16: the palette size
	tilePlainRLE   = 128
	tilePaletteRLE = 130 // 130 to 255
)

// rect encodes r of img. mode picks each tile's subencoding (one of the
// tile constants) by the tile's index; a mode that cannot encode a tile
// (a solid tile of two colours) falls back to raw.
func (e *zrleEncoder) rect(img *image.RGBA, r image.Rectangle, mode func(tile int) int) []byte {
	if e.zw == nil {
		e.zw = zlib.NewWriter(&e.buf)
	}
	var data []byte
	i := 0
	for ty := r.Min.Y; ty < r.Max.Y; ty += 64 {
		for tx := r.Min.X; tx < r.Max.X; tx += 64 {
			t := image.Rect(tx, ty, min(tx+64, r.Max.X), min(ty+64, r.Max.Y))
			data = appendTile(data, img, t, mode(i))
			i++
		}
	}
	e.zw.Write(data)
	e.zw.Flush()
	out := append(rectHeader(r, ZRLE), binary.BigEndian.AppendUint32(nil, uint32(e.buf.Len()))...)
	out = append(out, e.buf.Bytes()...)
	e.buf.Reset()
	return out
}

func cpixel(c color.RGBA) []byte { return []byte{c.R, c.G, c.B} }

func appendTile(b []byte, img *image.RGBA, t image.Rectangle, mode int) []byte {
	var px []color.RGBA
	var pal []color.RGBA
	index := map[color.RGBA]int{}
	for y := t.Min.Y; y < t.Max.Y; y++ {
		for x := t.Min.X; x < t.Max.X; x++ {
			c := img.RGBAAt(x, y)
			px = append(px, c)
			if _, ok := index[c]; !ok {
				index[c] = len(pal)
				pal = append(pal, c)
			}
		}
	}
	appendRun := func(b []byte, n int) []byte {
		n--
		for ; n >= 255; n -= 255 {
			b = append(b, 255)
		}
		return append(b, byte(n))
	}
	runs := func(f func(c color.RGBA, n int)) {
		for i := 0; i < len(px); {
			j := i + 1
			for j < len(px) && px[j] == px[i] {
				j++
			}
			f(px[i], j-i)
			i = j
		}
	}
	switch {
	case mode == tileSolid && len(pal) == 1:
		return append(append(b, 1), cpixel(pal[0])...)
	case mode == tilePacked && len(pal) >= 2 && len(pal) <= 16:
		b = append(b, byte(len(pal)))
		for _, c := range pal {
			b = append(b, cpixel(c)...)
		}
		bpp := 4
		switch {
		case len(pal) == 2:
			bpp = 1
		case len(pal) <= 4:
			bpp = 2
		}
		w := t.Dx()
		for y := range t.Dy() {
			var cur byte
			nbits := 0
			for x := range w {
				cur = cur<<bpp | byte(index[px[y*w+x]])
				nbits += bpp
				if nbits == 8 {
					b = append(b, cur)
					cur, nbits = 0, 0
				}
			}
			if nbits > 0 {
				b = append(b, cur<<(8-nbits))
			}
		}
		return b
	case mode == tilePlainRLE:
		b = append(b, 128)
		runs(func(c color.RGBA, n int) { b = appendRun(append(b, cpixel(c)...), n) })
		return b
	case mode == tilePaletteRLE && len(pal) >= 2 && len(pal) <= 127:
		b = append(b, byte(128+len(pal)))
		for _, c := range pal {
			b = append(b, cpixel(c)...)
		}
		runs(func(c color.RGBA, n int) {
			if n == 1 {
				b = append(b, byte(index[c]))
			} else {
				b = appendRun(append(b, byte(index[c])|0x80), n)
			}
		})
		return b
	}
	b = append(b, 0)
	for _, c := range px {
		b = append(b, cpixel(c)...)
	}
	return b
}

// fenceMsg is a ServerFence message.
func fenceMsg(flags uint32, payload []byte) []byte {
	b := append([]byte{msgServerFence, 0, 0, 0}, binary.BigEndian.AppendUint32(nil, flags)...)
	return append(append(b, byte(len(payload))), payload...)
}
