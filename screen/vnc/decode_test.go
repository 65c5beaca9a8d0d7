package vnc

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testImage is a screen whose 64x64 tiles exercise every ZRLE subencoding:
// one colour, two, three, twelve, and a gradient of many; its size is not a
// multiple of 64, so the last row and column of tiles are partial.
func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	ntx := (w + 63) / 64
	for y := range h {
		for x := range w {
			k := x/64 + y/64*ntx
			var c color.RGBA
			switch k % 5 {
			case 0:
				c = color.RGBA{0x33, 0x66, 0x99, 0xff}
			case 1:
				c = [2]color.RGBA{{0xff, 0, 0, 0xff}, {0, 0, 0, 0xff}}[(x/3+y)%2]
			case 2:
				c = [3]color.RGBA{{0xff, 0xff, 0xff, 0xff}, {0, 0x80, 0, 0xff}, {0x10, 0x20, 0x30, 0xff}}[(x/5+y/7)%3]
			case 3:
				c = color.RGBA{byte(20 * ((x + 2*y) % 12)), 0x40, byte(x), 0xff}
			case 4:
				c = color.RGBA{byte(x * 3), byte(y * 5), byte(x ^ y), 0xff}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// decodeAll runs a decoder with a w x h framebuffer over msgs until its
// input ends, and returns it with the messages it read.
func decodeAll(w, h int, msgs ...[]byte) (*decoder, []serverMsg, error) {
	d := newDecoder(bufio.NewReader(bytes.NewReader(bytes.Join(msgs, nil))), w, h)
	var got []serverMsg
	for {
		m, err := d.next()
		if err == io.EOF {
			return d, got, nil
		}
		if err != nil {
			return d, got, err
		}
		got = append(got, m)
	}
}

// diffImages describes how got differs from want, or returns "".
func diffImages(want, got *image.RGBA) string {
	if want.Rect != got.Rect {
		return fmt.Sprintf("bounds %v, want %v", got.Rect, want.Rect)
	}
	n := 0
	var first string
	for y := want.Rect.Min.Y; y < want.Rect.Max.Y; y++ {
		for x := want.Rect.Min.X; x < want.Rect.Max.X; x++ {
			if w, g := want.RGBAAt(x, y), got.RGBAAt(x, y); w != g {
				if n == 0 {
					first = fmt.Sprintf("pixel (%d,%d) = %v, want %v", x, y, g, w)
				}
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d pixels differ; first %s", n, first)
}

func TestDecodeEncodings(t *testing.T) {
	const w, h = 150, 100
	want := testImage(w, h)
	all := want.Rect
	mode := func(m int) func(int) int { return func(int) int { return m } }
	cycle := func(tile int) int {
		return [...]int{tileSolid, tilePacked, tilePacked, tilePaletteRLE, tileRaw, tilePlainRLE}[tile%6]
	}
	tests := []struct {
		name string
		msgs func() [][]byte
	}{
		{"raw", func() [][]byte { return [][]byte{updateMsg(rawRect(want, all))} }},
		{"raw in pieces", func() [][]byte {
			return [][]byte{updateMsg(rawRect(want, image.Rect(0, 0, w, 50)), rawRect(want, image.Rect(0, 50, 70, h)), rawRect(want, image.Rect(70, 50, w, h)))}
		}},
		{"zrle raw tiles", func() [][]byte {
			var e zrleEncoder
			return [][]byte{updateMsg(e.rect(want, all, mode(tileRaw)))}
		}},
		{"zrle solid tiles", func() [][]byte {
			var e zrleEncoder
			return [][]byte{updateMsg(e.rect(want, all, mode(tileSolid)))}
		}},
		{"zrle packed palettes", func() [][]byte {
			var e zrleEncoder
			return [][]byte{updateMsg(e.rect(want, all, mode(tilePacked)))}
		}},
		{"zrle plain rle", func() [][]byte {
			var e zrleEncoder
			return [][]byte{updateMsg(e.rect(want, all, mode(tilePlainRLE)))}
		}},
		{"zrle palette rle", func() [][]byte {
			var e zrleEncoder
			return [][]byte{updateMsg(e.rect(want, all, mode(tilePaletteRLE)))}
		}},
		{"zrle one stream over rectangles and messages", func() [][]byte {
			var e zrleEncoder
			return [][]byte{
				updateMsg(e.rect(want, image.Rect(0, 0, 100, 30), cycle), e.rect(want, image.Rect(100, 0, w, 30), cycle)),
				updateMsg(e.rect(want, image.Rect(0, 30, w, 64), cycle)),
				updateMsg(e.rect(want, image.Rect(0, 64, w, h), cycle)),
			}
		}},
		{"copyrect", func() [][]byte {
			// Send the screen shifted, then copy it into place.
			shifted := image.NewRGBA(all)
			copyPixels(shifted, want, image.Rect(0, 0, w-10, h-20), image.Pt(10, 20))
			return [][]byte{
				updateMsg(rawRect(shifted, all)),
				updateMsg(copyRectMsg(image.Rect(0, 0, w-10, h-20), image.Pt(10, 20)),
					rawRect(want, image.Rect(w-10, 0, w, h)), rawRect(want, image.Rect(0, h-20, w-10, h))),
			}
		}},
		{"copyrect downwards, overlapping", func() [][]byte {
			shifted := image.NewRGBA(all)
			copyPixels(shifted, want, image.Rect(7, 9, w, h), image.Pt(0, 0))
			return [][]byte{
				updateMsg(rawRect(shifted, all)),
				updateMsg(copyRectMsg(image.Rect(7, 9, w, h), image.Pt(0, 0)),
					rawRect(want, image.Rect(0, 0, w, 9)), rawRect(want, image.Rect(0, 9, 7, h))),
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := decodeAll(w, h, tt.msgs()...)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := diffImages(want, d.fb); diff != "" {
				t.Errorf("decoded framebuffer: %s", diff)
			}
		})
	}
}

func TestDecodeMessages(t *testing.T) {
	img := testImage(80, 60)
	var cursor []byte
	cursor = append(cursor, rectHeader(image.Rect(3, 4, 3+12, 4+10), encCursor)...)
	cursor = append(cursor, make([]byte, 12*10*4+2*10)...)
	tests := []struct {
		name string
		msgs [][]byte
		want []serverMsg
		size image.Point
	}{
		{
			name: "bell, colour map and clipboard are skipped",
			msgs: [][]byte{
				{msgBell},
				{msgSetColourMapEntries, 0, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
				append([]byte{msgServerCutText, 0, 0, 0}, lenString("copied text")...),
			},
			want: []serverMsg{{typ: msgBell}, {typ: msgSetColourMapEntries}, {typ: msgServerCutText}},
			size: image.Pt(80, 60),
		},
		{
			name: "damage",
			msgs: [][]byte{updateMsg(rawRect(img, image.Rect(1, 2, 30, 40)), rawRect(img, image.Rect(0, 0, 0, 0)), copyRectMsg(image.Rect(50, 50, 60, 60), image.Pt(0, 0)))},
			want: []serverMsg{{typ: msgFramebufferUpdate, dirty: []image.Rectangle{image.Rect(1, 2, 30, 40), image.Rect(50, 50, 60, 60)}}},
			size: image.Pt(80, 60),
		},
		{
			name: "a cursor shape changes no pixels",
			msgs: [][]byte{updateMsg(cursor)},
			want: []serverMsg{{typ: msgFramebufferUpdate}},
			size: image.Pt(80, 60),
		},
		{
			name: "LED state",
			msgs: [][]byte{updateMsg(append(rectHeader(image.Rectangle{}, encLEDState), ledNumLock|ledCapsLock))},
			want: []serverMsg{{typ: msgFramebufferUpdate, leds: ledNumLock | ledCapsLock, hasLEDs: true}},
			size: image.Pt(80, 60),
		},
		{
			name: "fence",
			msgs: [][]byte{fenceMsg(fenceRequest|fenceBlockBefore, []byte{1, 2, 3})},
			want: []serverMsg{{typ: msgServerFence, fenceFlags: fenceRequest | fenceBlockBefore, fencePayload: []byte{1, 2, 3}}},
			size: image.Pt(80, 60),
		},
		{
			name: "desktop size",
			msgs: [][]byte{updateMsg(desktopSizeMsg(100, 30))},
			want: []serverMsg{{typ: msgFramebufferUpdate, resized: true, dirty: []image.Rectangle{image.Rect(0, 0, 100, 30)}}},
			size: image.Pt(100, 30),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, got, err := decodeAll(80, 60, tt.msgs...)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(serverMsg{})); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if d.fb.Rect.Size() != tt.size {
				t.Errorf("framebuffer size %v, want %v", d.fb.Rect.Size(), tt.size)
			}
		})
	}
}

func TestDecodeDesktopSizeKeepsPixels(t *testing.T) {
	img := testImage(80, 60)
	d, _, err := decodeAll(80, 60, updateMsg(rawRect(img, img.Rect)), updateMsg(desktopSizeMsg(40, 100)))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := image.NewRGBA(image.Rect(0, 0, 40, 100))
	copyPixels(want, img, image.Rect(0, 0, 40, 60), image.Point{})
	if diff := diffImages(want, d.fb); diff != "" {
		t.Errorf("framebuffer after a resize to 40x100: %s", diff)
	}
}

// zrlePayload wraps inflated ZRLE data, compressed with a fresh stream, as
// a rectangle.
func zrlePayload(r image.Rectangle, inflated []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(inflated)
	zw.Flush()
	b := append(rectHeader(r, ZRLE), binary.BigEndian.AppendUint32(nil, uint32(buf.Len()))...)
	return append(b, buf.Bytes()...)
}

func TestDecodeErrors(t *testing.T) {
	img := testImage(80, 60)
	raw := updateMsg(rawRect(img, img.Rect))
	hugeZRLE := append(rectHeader(image.Rect(0, 0, 8, 8), ZRLE), 0xff, 0xff, 0xff, 0xff)
	tests := []struct {
		name string
		msg  []byte
		want string // part of the error
	}{
		{"unknown message", []byte{77}, "unknown server message type 77"},
		{"rectangle outside", updateMsg(rawRect(testImage(90, 60), image.Rect(10, 0, 90, 10))), "outside the 80x60 framebuffer"},
		{"rectangle past 65535", updateMsg(rectHeader(image.Rect(65530, 0, 65530+10, 1), Raw)), "outside"},
		{"copy source outside", updateMsg(copyRectMsg(image.Rect(0, 0, 10, 10), image.Pt(75, 0))), "copy source"},
		{"unasked encoding", updateMsg(rectHeader(image.Rect(0, 0, 1, 1), 5)), "did not ask for"},
		{"truncated raw", raw[:len(raw)-1], "unexpected EOF"},
		{"truncated header", raw[:9], "unexpected EOF"},
		{"truncated clipboard", append([]byte{msgServerCutText, 0, 0, 0}, 0, 0, 1, 0, 'x'), "unexpected EOF"},
		{"desktop size zero", updateMsg(desktopSizeMsg(0, 10)), "framebuffer size 0x10"},
		{"desktop size too big", updateMsg(desktopSizeMsg(8000, 8000)), "framebuffer size 8000x8000"},
		{"zrle length", updateMsg(hugeZRLE), "compressed data for 64 pixels"},
		{"zrle garbage", updateMsg(append(rectHeader(image.Rect(0, 0, 4, 4), ZRLE), 0, 0, 0, 4, 1, 2, 3, 4)), "zlib"},
		{"zrle short", updateMsg(zrlePayload(image.Rect(0, 0, 4, 4), []byte{0, 1, 2})), "compressed data ends inside a ZRLE rectangle"},
		{"zrle unused subencoding", updateMsg(zrlePayload(image.Rect(0, 0, 4, 4), []byte{17})), "unused tile subencoding 17"},
		{"zrle packed index", updateMsg(zrlePayload(image.Rect(0, 0, 4, 1), []byte{3, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0xff})), "palette index 3 of a 3-colour palette"},
		{"zrle rle index", updateMsg(zrlePayload(image.Rect(0, 0, 4, 1), []byte{130, 1, 1, 1, 2, 2, 2, 5})), "palette index 5"},
		{"zrle run overflow", updateMsg(zrlePayload(image.Rect(0, 0, 4, 4), []byte{128, 1, 2, 3, 255, 255})), "overflows"},
		{"zrle extra data", updateMsg(zrlePayload(image.Rect(0, 0, 4, 4), []byte{1, 1, 2, 3, 9})), "left over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeAll(80, 60, tt.msg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decode(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
			if errors.Is(err, io.EOF) {
				t.Errorf("decode(%s) = %v: a truncated message must not look like a clean end", tt.name, err)
			}
		})
	}
}
