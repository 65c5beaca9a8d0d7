package replay

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // screenshots may be JPEG
	"image/png"
	"math"

	"golang.org/x/image/draw"
)

// DiffWidth is the width both images are scaled to before they are compared:
// small enough to ignore antialiasing and subpixel shifts, large enough to see
// a changed word.
const DiffWidth = 320

// lumaTolerance is how much (0..1) the blurred luminance of a pixel may
// change before the pixel counts as different.
const lumaTolerance = 0.08

// Diff is the perceptual difference of two images.
type Diff struct {
	// Score is the fraction (0..1) of the compared pixels that differ
	// visibly. Images of different aspect ratios score 1.
	Score float64
	// Changed marks the differing pixels on a DiffWidth-wide grid of the
	// expected image, for drawing.
	Changed *image.Alpha
}

// Compare measures how differently a and b look. Both are scaled to
// DiffWidth pixels wide, turned to luminance and blurred by one pixel, so
// that compression noise, antialiasing and a pixel of drift do not count;
// a pixel whose luminance changed by more than a small tolerance counts as
// changed.
func Compare(a, b image.Image) Diff {
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Empty() || bb.Empty() {
		return Diff{Score: 1}
	}
	ra := float64(ab.Dx()) / float64(ab.Dy())
	rb := float64(bb.Dx()) / float64(bb.Dy())
	if math.Abs(ra-rb)/ra > 0.02 {
		return Diff{Score: 1}
	}
	w := min(DiffWidth, ab.Dx())
	h := max(1, int(math.Round(float64(w)/ra)))
	la, lb := luma(a, w, h), luma(b, w, h)
	changed := image.NewAlpha(image.Rect(0, 0, w, h))
	n := 0
	for i := range la {
		if math.Abs(la[i]-lb[i]) > lumaTolerance {
			changed.Pix[i] = 0xff
			n++
		}
	}
	return Diff{Score: float64(n) / float64(w*h), Changed: changed}
}

// luma scales img to w x h and returns its luminance (0..1), blurred with a
// 3x3 box.
func luma(img image.Image, w, h int) []float64 {
	small := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(small, small.Bounds(), img, img.Bounds(), draw.Src, nil)
	l := make([]float64, w*h)
	for i := range l {
		p := small.Pix[i*4 : i*4+3]
		l[i] = (0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])) / 255
	}
	out := make([]float64, w*h)
	for y := range h {
		for x := range w {
			var sum float64
			var k int
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					xx, yy := x+dx, y+dy
					if xx < 0 || yy < 0 || xx >= w || yy >= h {
						continue
					}
					sum += l[yy*w+xx]
					k++
				}
			}
			out[y*w+x] = sum / float64(k)
		}
	}
	return out
}

// SideBySide draws want, got and the difference next to each other, each
// scaled to at most 640 pixels wide: the expected image, the actual one, and
// the actual one dimmed with the changed areas in red.
func SideBySide(want, got image.Image, d Diff) *image.RGBA {
	const panel = 640
	wb := want.Bounds()
	pw := min(panel, wb.Dx())
	ph := max(1, wb.Dy()*pw/max(wb.Dx(), 1))
	const gap = 8
	out := image.NewRGBA(image.Rect(0, 0, 3*pw+2*gap, ph))
	draw.Draw(out, out.Bounds(), image.NewUniform(color.RGBA{0x20, 0x20, 0x20, 0xff}), image.Point{}, draw.Src)
	r0 := image.Rect(0, 0, pw, ph)
	r1 := r0.Add(image.Pt(pw+gap, 0))
	r2 := r1.Add(image.Pt(pw+gap, 0))
	draw.ApproxBiLinear.Scale(out, r0, want, wb, draw.Src, nil)
	draw.ApproxBiLinear.Scale(out, r1, got, got.Bounds(), draw.Src, nil)
	draw.ApproxBiLinear.Scale(out, r2, got, got.Bounds(), draw.Src, nil)
	// Dim the third panel, then paint the changed cells red over it.
	draw.Draw(out, r2, image.NewUniform(color.RGBA{0xff, 0xff, 0xff, 0xa0}), image.Point{}, draw.Over)
	if d.Changed != nil {
		red := image.NewUniform(color.RGBA{0xe0, 0x10, 0x10, 0xff})
		mask := image.NewAlpha(image.Rect(0, 0, pw, ph))
		draw.NearestNeighbor.Scale(mask, mask.Bounds(), d.Changed, d.Changed.Bounds(), draw.Src, nil)
		draw.DrawMask(out, r2, red, image.Point{}, mask, image.Point{}, draw.Over)
	}
	return out
}

// Decode decodes a PNG or JPEG screenshot.
func Decode(data []byte) (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	return img, nil
}

// EncodePNG encodes img as PNG.
func EncodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
