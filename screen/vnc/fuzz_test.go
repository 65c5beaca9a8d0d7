package vnc

import (
	"bufio"
	"bytes"
	"image"
	"testing"
)

// FuzzDecode feeds a hostile server's messages to the decoder of a 32x24
// framebuffer. Whatever the bytes, it must return errors, never panic,
// keep every damaged rectangle inside the framebuffer, and allocate no
// more than the limits allow.
func FuzzDecode(f *testing.F) {
	img := testImage(32, 24)
	all := img.Rect
	var e zrleEncoder
	for _, mode := range []int{tileRaw, tileSolid, tilePacked, tilePlainRLE, tilePaletteRLE} {
		f.Add(updateMsg(e.rect(img, all, func(int) int { return mode })))
	}
	f.Add(bytes.Join([][]byte{
		updateMsg(rawRect(img, image.Rect(0, 0, 8, 8)), copyRectMsg(image.Rect(8, 8, 16, 16), image.Pt(0, 0))),
		updateMsg(desktopSizeMsg(40, 30)),
		{msgBell},
		append([]byte{msgServerCutText, 0, 0, 0}, lenString("text")...),
		{msgSetColourMapEntries, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6},
	}, nil))
	f.Add(updateMsg(append(rectHeader(image.Rect(0, 0, 2, 2), encCursor), make([]byte, 2*2*4+2)...)))
	f.Add(updateMsg(zrlePayload(image.Rect(0, 0, 4, 4), []byte{128, 1, 2, 3, 255, 255})))
	f.Add(updateMsg(zrlePayload(image.Rect(0, 0, 4, 1), []byte{3, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0xff})))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newDecoder(bufio.NewReader(bytes.NewReader(data)), 32, 24)
		d.maxPixels = 64 * 64
		for range 64 {
			m, err := d.next()
			if err != nil {
				return
			}
			for _, r := range m.dirty {
				if !r.In(d.fb.Rect) {
					t.Fatalf("damaged rectangle %v outside the %v framebuffer", r, d.fb.Rect)
				}
			}
			if n := d.fb.Rect.Dx() * d.fb.Rect.Dy(); n > d.maxPixels {
				t.Fatalf("framebuffer of %d pixels, limit %d", n, d.maxPixels)
			}
		}
	})
}
