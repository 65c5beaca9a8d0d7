package vnc

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"sync/atomic"
)

// This file decodes server-to-client messages (RFC 6143 section 7.6) and
// applies framebuffer updates to an image. Nothing a server sends can make
// it panic or allocate more than the limits in rfb.go: every rectangle is
// checked against the framebuffer before its pixels are read, and data the
// client does not keep (cursor shapes, clipboard text) is skipped without
// being stored.

// Server-to-client message types.
const (
	msgFramebufferUpdate   = 0
	msgSetColourMapEntries = 1
	msgBell                = 2
	msgServerCutText       = 3
	msgServerFence         = 248
)

// maxDirty is how many damaged rectangles an update keeps before it merges
// them into their bounding box.
const maxDirty = 64

// maxZlibCarry bounds the compressed bytes a ZRLE rectangle may leave
// unread for the next one. A real server leaves the few bytes of a zlib
// sync flush.
const maxZlibCarry = 1 << 20

// decoder reads server messages from r and applies framebuffer updates to
// fb, which it owns. It is used by one goroutine at a time.
type decoder struct {
	r         *bufio.Reader
	fb        *image.RGBA
	maxPixels int // framebuffer area limit; maxPixels if 0

	// ZRLE: one zlib stream for the whole connection. zin feeds it exactly
	// the compressed bytes of the rectangle being decoded; zout buffers its
	// output, which never runs past the end of a rectangle's data because
	// the server flushes the stream after each rectangle.
	zin  zfeed
	zr   io.ReadCloser
	zout *bufio.Reader

	scratch []byte
	pal     [127][4]byte

	// rects counts the rectangles decoded, by encoding: Raw, CopyRect,
	// ZRLE. Tests and benchmarks read it while the decoder runs.
	rects [3]atomic.Int64
}

// encodingIndex returns the index of e in decoder.rects.
func encodingIndex(e Encoding) int {
	switch e {
	case CopyRect:
		return 1
	case ZRLE:
		return 2
	}
	return 0
}

func newDecoder(r *bufio.Reader, w, h int) *decoder {
	d := &decoder{r: r, fb: image.NewRGBA(image.Rect(0, 0, w, h))}
	d.zin.r = r
	return d
}

// serverMsg is what one server message did.
type serverMsg struct {
	typ     byte
	dirty   []image.Rectangle // FramebufferUpdate: the pixels that changed
	resized bool              // FramebufferUpdate: the framebuffer changed size
	leds    byte              // FramebufferUpdate: the LED state sent, if hasLEDs
	hasLEDs bool

	fenceFlags   uint32 // ServerFence
	fencePayload []byte // ServerFence
}

// next reads one server message and applies it. An error leaves the
// connection out of step: the caller must close it.
func (d *decoder) next() (serverMsg, error) {
	typ, err := d.r.ReadByte()
	if err != nil {
		return serverMsg{}, err
	}
	m := serverMsg{typ: typ}
	switch typ {
	case msgFramebufferUpdate:
		err = d.update(&m)
	case msgSetColourMapEntries:
		// A true-colour client needs no colour map; skip the entries.
		var b [5]byte
		if _, err = io.ReadFull(d.r, b[:]); err == nil {
			err = d.skip(6 * int64(binary.BigEndian.Uint16(b[3:])))
		}
	case msgBell:
	case msgServerFence:
		var b [8]byte
		if _, err = io.ReadFull(d.r, b[:]); err == nil {
			m.fenceFlags = binary.BigEndian.Uint32(b[3:])
			if n := int(b[7]); n > maxFencePayload {
				err = fmt.Errorf("fence payload of %d bytes, more than %d", n, maxFencePayload)
			} else {
				m.fencePayload = make([]byte, n)
				_, err = io.ReadFull(d.r, m.fencePayload)
			}
		}
	case msgServerCutText:
		var b [7]byte
		if _, err = io.ReadFull(d.r, b[:]); err == nil {
			err = d.skip(int64(binary.BigEndian.Uint32(b[3:])))
		}
	default:
		return m, fmt.Errorf("unknown server message type %d", typ)
	}
	if err != nil {
		return m, fmt.Errorf("server message %d: %w", typ, unexpected(err))
	}
	return m, nil
}

// unexpected turns an io.EOF in the middle of a message into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *decoder) skip(n int64) error {
	_, err := io.CopyN(io.Discard, d.r, n)
	return err
}

// update applies one FramebufferUpdate.
func (d *decoder) update(m *serverMsg) error {
	var b [3]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	for i := range n {
		var h [12]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return err
		}
		x, y := int(binary.BigEndian.Uint16(h[0:])), int(binary.BigEndian.Uint16(h[2:]))
		w, ht := int(binary.BigEndian.Uint16(h[4:])), int(binary.BigEndian.Uint16(h[6:]))
		enc := Encoding(int32(binary.BigEndian.Uint32(h[8:])))
		r := image.Rect(x, y, x+w, y+ht)
		var err error
		switch enc {
		case encDesktopSize:
			if err := d.resize(w, ht); err != nil {
				return fmt.Errorf("rectangle %d: desktop size: %w", i, err)
			}
			m.resized = true
			m.dirty = []image.Rectangle{d.fb.Rect}
			continue
		case encCursor:
			// The shape of the pointer, which the client does not draw:
			// pixels, then a bitmask with rows padded to whole bytes.
			err = d.skip(int64(w)*int64(ht)*4 + int64((w+7)/8)*int64(ht))
		case encLEDState:
			m.leds, err = d.r.ReadByte()
			m.hasLEDs = err == nil
		case Raw, CopyRect, ZRLE:
			if !inside(r, d.fb.Rect) {
				return fmt.Errorf("rectangle %d %v lies outside the %dx%d framebuffer", i, r, d.fb.Rect.Dx(), d.fb.Rect.Dy())
			}
			switch enc {
			case Raw:
				err = d.raw(r)
			case CopyRect:
				err = d.copyRect(r)
			default:
				err = d.zrle(r)
			}
			if err == nil {
				d.rects[encodingIndex(enc)].Add(1)
				if !r.Empty() {
					m.dirty = addDirty(m.dirty, r)
				}
			}
		default:
			return fmt.Errorf("rectangle %d %v: encoding %v, which the client did not ask for", i, r, enc)
		}
		if err != nil {
			return fmt.Errorf("rectangle %d %v (%v): %w", i, r, enc, unexpected(err))
		}
	}
	return nil
}

// inside reports whether r lies within fb. Unlike image.Rectangle.In, it
// holds an empty rectangle to its coordinates too.
func inside(r, fb image.Rectangle) bool {
	return r.Min.X >= fb.Min.X && r.Min.Y >= fb.Min.Y && r.Max.X <= fb.Max.X && r.Max.Y <= fb.Max.Y
}

// addDirty adds r to the damaged rectangles of an update, merging them all
// into one once there are too many.
func addDirty(dirty []image.Rectangle, r image.Rectangle) []image.Rectangle {
	if len(dirty) < maxDirty {
		return append(dirty, r)
	}
	u := r
	for _, d := range dirty {
		u = u.Union(d)
	}
	return append(dirty[:0], u)
}

// resize gives the framebuffer a new size, keeping the pixels the old and
// new sizes share (RFC 6143 section 7.8.2: a client should keep them).
func (d *decoder) resize(w, h int) error {
	if err := checkSize(w, h); err != nil {
		return err
	}
	if limit := d.maxPixels; limit > 0 && w*h > limit {
		return fmt.Errorf("framebuffer size %dx%d is more than %d px", w, h, limit)
	}
	old := d.fb
	d.fb = image.NewRGBA(image.Rect(0, 0, w, h))
	copyPixels(d.fb, old, old.Rect.Intersect(d.fb.Rect), image.Point{})
	return nil
}

// raw reads r's pixels straight into the framebuffer.
func (d *decoder) raw(r image.Rectangle) error {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := d.fb.PixOffset(r.Min.X, y)
		row := d.fb.Pix[i : i+4*r.Dx()]
		if _, err := io.ReadFull(d.r, row); err != nil {
			return err
		}
		for j := 3; j < len(row); j += 4 {
			row[j] = 0xff
		}
	}
	return nil
}

// copyRect copies pixels from elsewhere in the framebuffer to r.
func (d *decoder) copyRect(r image.Rectangle) error {
	var b [4]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return err
	}
	src := image.Pt(int(binary.BigEndian.Uint16(b[0:])), int(binary.BigEndian.Uint16(b[2:])))
	if s := r.Sub(r.Min).Add(src); !inside(s, d.fb.Rect) {
		return fmt.Errorf("copy source %v lies outside the %dx%d framebuffer", s, d.fb.Rect.Dx(), d.fb.Rect.Dy())
	}
	copyPixels(d.fb, d.fb, r.Sub(r.Min).Add(src), r.Min)
	return nil
}

// copyPixels copies the rectangle src of s to dst at dp. dst and s may be
// the same image, with overlapping rectangles.
func copyPixels(dst, s *image.RGBA, src image.Rectangle, dp image.Point) {
	n := 4 * src.Dx()
	if n == 0 {
		return
	}
	rows := src.Dy()
	step := 1
	first := 0
	if dst == s && dp.Y > src.Min.Y { // copying down: go bottom-up
		step, first = -1, rows-1
	}
	for k, row := 0, first; k < rows; k, row = k+1, row+step {
		si := s.PixOffset(src.Min.X, src.Min.Y+row)
		di := dst.PixOffset(dp.X, dp.Y+row)
		copy(dst.Pix[di:di+n], s.Pix[si:si+n])
	}
}

// zrle decodes a ZRLE rectangle: a length, then that many bytes of the
// connection's zlib stream, which inflate to 64x64 tiles.
func (d *decoder) zrle(r image.Rectangle) error {
	var b [4]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint32(b[:]))
	// Compressed data never needs much more room than raw pixels; the
	// bound keeps a lying length from being taken at its word.
	if limit := 8*int64(r.Dx())*int64(r.Dy()) + 1<<16; n > limit {
		return fmt.Errorf("%d bytes of compressed data for %d pixels", n, r.Dx()*r.Dy())
	}
	d.zin.left = n
	if d.zr == nil {
		zr, err := zlib.NewReader(&d.zin)
		if err != nil {
			return fmt.Errorf("zlib stream: %w", err)
		}
		d.zr, d.zout = zr, bufio.NewReaderSize(zr, 64<<10)
	}
	for ty := r.Min.Y; ty < r.Max.Y; ty += 64 {
		for tx := r.Min.X; tx < r.Max.X; tx += 64 {
			t := image.Rect(tx, ty, min(tx+64, r.Max.X), min(ty+64, r.Max.Y))
			if err := d.zrleTile(t); err != nil {
				return fmt.Errorf("tile at (%d,%d): %w", tx, ty, err)
			}
		}
	}
	if d.zout.Buffered() > 0 {
		return fmt.Errorf("%d bytes of inflated data left over", d.zout.Buffered())
	}
	return d.zin.keepRest()
}

// zrleTile decodes one tile (RFC 6143 section 7.7.6).
func (d *decoder) zrleTile(t image.Rectangle) error {
	sub, err := d.zout.ReadByte()
	if err != nil {
		return err
	}
	w, h := t.Dx(), t.Dy()
	switch {
	case sub == 0: // raw CPIXELs
		buf, err := d.read(3 * w * h)
		if err != nil {
			return err
		}
		for y := range h {
			row := d.fb.Pix[d.fb.PixOffset(t.Min.X, t.Min.Y+y):]
			for x := range w {
				c := buf[3*(y*w+x):]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c[0], c[1], c[2], 0xff
			}
		}
	case sub == 1: // one colour
		c, err := d.read(3)
		if err != nil {
			return err
		}
		d.fill(t, 0, w*h, rgba(c))
	case sub <= 16: // packed palette
		pal, err := d.palette(int(sub))
		if err != nil {
			return err
		}
		bpp := 4
		switch {
		case sub == 2:
			bpp = 1
		case sub <= 4:
			bpp = 2
		}
		stride := (w*bpp + 7) / 8
		buf, err := d.read(stride * h)
		if err != nil {
			return err
		}
		mask := byte(1<<bpp - 1)
		for y := range h {
			row := d.fb.Pix[d.fb.PixOffset(t.Min.X, t.Min.Y+y):]
			for x := range w {
				bit := x * bpp
				idx := int(buf[y*stride+bit/8]>>(8-bpp-bit%8)) & int(mask)
				if idx >= len(pal) {
					return fmt.Errorf("palette index %d of a %d-colour palette", idx, len(pal))
				}
				c := pal[idx]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c[0], c[1], c[2], 0xff
			}
		}
	case sub == 128: // plain RLE
		for i := 0; i < w*h; {
			c, err := d.read(3)
			if err != nil {
				return err
			}
			col := rgba(c)
			run, err := d.runLength(w*h - i)
			if err != nil {
				return err
			}
			d.fill(t, i, run, col)
			i += run
		}
	case sub >= 130: // palette RLE
		pal, err := d.palette(int(sub) - 128)
		if err != nil {
			return err
		}
		for i := 0; i < w*h; {
			b, err := d.zout.ReadByte()
			if err != nil {
				return err
			}
			run := 1
			if b&0x80 != 0 {
				if run, err = d.runLength(w*h - i); err != nil {
					return err
				}
			}
			idx := int(b & 0x7f)
			if idx >= len(pal) {
				return fmt.Errorf("palette index %d of a %d-colour palette", idx, len(pal))
			}
			d.fill(t, i, run, pal[idx])
			i += run
		}
	default:
		return fmt.Errorf("unused tile subencoding %d", sub)
	}
	return nil
}

// read returns the next n bytes of inflated data, valid until the next
// call.
func (d *decoder) read(n int) ([]byte, error) {
	if cap(d.scratch) < n {
		d.scratch = make([]byte, n)
	}
	b := d.scratch[:n]
	_, err := io.ReadFull(d.zout, b)
	return b, err
}

// palette reads n CPIXELs (n <= 127) into the decoder's palette.
func (d *decoder) palette(n int) ([][4]byte, error) {
	b, err := d.read(3 * n)
	if err != nil {
		return nil, err
	}
	pal := d.pal[:n]
	for i := range pal {
		pal[i] = rgba(b[3*i:])
	}
	return pal, nil
}

// runLength reads a ZRLE run length: one more than the sum of its bytes,
// every byte but the last being 255. A run longer than left pixels is an
// error.
func (d *decoder) runLength(left int) (int, error) {
	run := 1
	for {
		b, err := d.zout.ReadByte()
		if err != nil {
			return 0, err
		}
		run += int(b)
		if run > left {
			return 0, fmt.Errorf("a run of at least %d pixels overflows the %d left in the tile", run, left)
		}
		if b != 255 {
			return run, nil
		}
	}
}

func rgba(c []byte) [4]byte { return [4]byte{c[0], c[1], c[2], 0xff} }

// fill paints n pixels of tile t with c, starting at the i-th pixel in
// row order.
func (d *decoder) fill(t image.Rectangle, i, n int, c [4]byte) {
	w := t.Dx()
	for n > 0 {
		x, y := i%w, i/w
		span := min(n, w-x)
		off := d.fb.PixOffset(t.Min.X+x, t.Min.Y+y)
		row := d.fb.Pix[off : off+4*span]
		for j := 0; j < len(row); j += 4 {
			copy(row[j:j+4], c[:])
		}
		i += span
		n -= span
	}
}

// errZlibOverrun means that inflating a ZRLE rectangle needed more
// compressed bytes than the rectangle has.
var errZlibOverrun = errors.New("compressed data ends inside a ZRLE rectangle")

// zfeed gives the zlib stream its input: bytes left over from earlier
// rectangles, then the current rectangle's bytes as they arrive, and
// nothing more. It implements io.ByteReader, so that the inflater reads no
// further than it needs (compress/flate reads ahead from other readers).
type zfeed struct {
	r     *bufio.Reader
	carry []byte // stream bytes of earlier rectangles that were not needed yet
	left  int64  // bytes of the current rectangle not yet read from r
}

func (f *zfeed) ReadByte() (byte, error) {
	if len(f.carry) > 0 {
		b := f.carry[0]
		f.carry = f.carry[1:]
		return b, nil
	}
	if f.left <= 0 {
		return 0, errZlibOverrun
	}
	b, err := f.r.ReadByte()
	if err != nil {
		return 0, unexpected(err)
	}
	f.left--
	return b, nil
}

func (f *zfeed) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(f.carry) > 0 {
		n := copy(p, f.carry)
		f.carry = f.carry[n:]
		return n, nil
	}
	if f.left <= 0 {
		return 0, errZlibOverrun
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	if n > 0 {
		return n, nil
	}
	return 0, unexpected(err)
}

// keepRest reads the current rectangle's unread bytes into carry: they
// belong to the stream (the tail of a sync flush) and feed the next
// rectangle's inflation.
func (f *zfeed) keepRest() error {
	if f.left == 0 {
		return nil
	}
	if int64(len(f.carry))+f.left > maxZlibCarry {
		return fmt.Errorf("%d compressed bytes left unused", f.left)
	}
	rest := make([]byte, f.left)
	if _, err := io.ReadFull(f.r, rest); err != nil {
		return unexpected(err)
	}
	f.carry = append(f.carry, rest...)
	f.left = 0
	return nil
}
