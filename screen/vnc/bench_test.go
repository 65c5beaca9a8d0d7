package vnc

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"testing"

	"golang.org/x/image/draw"

	"github.com/spotter-harness/spotter/screen"
)

// BenchmarkScale measures the kernels Capture could use to fit a 1280x800
// screen to the sizes models ask for, and the encoders.
func BenchmarkScale(b *testing.B) {
	src := testImage(1280, 800)
	kernels := []struct {
		name string
		k    draw.Interpolator
	}{
		{"NearestNeighbor", draw.NearestNeighbor},
		{"ApproxBiLinear", draw.ApproxBiLinear},
		{"BiLinear", draw.BiLinear},
		{"CatmullRom", draw.CatmullRom},
	}
	for _, size := range []screen.Size{{W: 1024, H: 640}, {W: 1224, H: 765}} {
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%dx%d/%s", size.W, size.H, k.name), func(b *testing.B) {
				dst := image.NewRGBA(image.Rect(0, 0, size.W, size.H))
				for b.Loop() {
					k.k.Scale(dst, dst.Rect, src, src.Rect, draw.Src, nil)
				}
			})
		}
	}
	for _, f := range []screen.Format{screen.PNG, screen.JPEG} {
		b.Run("encode/1280x800/"+string(f), func(b *testing.B) {
			for b.Loop() {
				encode(src, f, 80)
			}
		})
	}
}

// BenchmarkDecode measures decoding one full 1280x800 update in each
// encoding, from memory (no server).
func BenchmarkDecode(b *testing.B) {
	img := testImage(1280, 800)
	var e zrleEncoder
	auto := func(tile int) int {
		return [...]int{tileSolid, tilePacked, tilePaletteRLE, tileRaw}[tile%4]
	}
	for _, tt := range []struct {
		name string
		msg  []byte
	}{
		{"Raw", updateMsg(rawRect(img, img.Rect))},
		{"ZRLE", updateMsg(e.rect(img, img.Rect, auto))},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.msg)))
			for b.Loop() {
				// Each iteration decodes with a fresh stream, as the
				// encoder made it.
				d := newDecoder(bufio.NewReader(bytes.NewReader(tt.msg)), 1280, 800)
				if _, err := d.next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
