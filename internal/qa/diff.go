package qa

import (
	"fmt"
	"image"
	"image/color"
	"os"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/spotter-harness/spotter/internal/replay"
)

// Captions of the three panels of a side-by-side diff.
var (
	regionCaptions = [3]string{"baseline", "actual", "difference"}
	replayCaptions = [3]string{"recorded", "actual", "difference"}
)

// sideGap is the gap between the panels of replay.SideBySide.
const sideGap = 8

// captionBand is the height of the band above the panels.
const captionBand = 20

// captioned returns img, a side-by-side diff (replay.SideBySide: three
// panels of equal width, sideGap apart), under a band that names each
// panel, so that the image says what it shows wherever it is opened. A
// caption wider than its panel is shortened, to its first letter at worst.
func captioned(img image.Image, caps [3]string) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()+captionBand))
	draw.Draw(out, out.Bounds(), image.NewUniform(color.RGBA{0x20, 0x20, 0x20, 0xff}), image.Point{}, draw.Src)
	draw.Draw(out, image.Rect(0, captionBand, b.Dx(), b.Dy()+captionBand), img, b.Min, draw.Src)
	pw := (b.Dx() - 2*sideGap) / 3
	face := basicfont.Face7x13
	for i, c := range caps {
		x0 := i * (pw + sideGap)
		text := fit(face, c, pw-4)
		if text == "" {
			continue
		}
		w := font.MeasureString(face, text).Ceil()
		d := font.Drawer{Dst: out, Src: image.NewUniform(color.White), Face: face,
			Dot: fixed.P(x0+(pw-w)/2, (captionBand+face.Ascent-face.Descent)/2+1)}
		d.DrawString(text)
	}
	return out
}

// fit shortens s to at most width pixels in face: whole, then cut with an
// ellipsis, then its first letter, then nothing.
func fit(face font.Face, s string, width int) string {
	if font.MeasureString(face, s).Ceil() <= width {
		return s
	}
	r := []rune(s)
	for n := len(r) - 1; n >= 2; n-- {
		t := string(r[:n]) + "."
		if font.MeasureString(face, t).Ceil() <= width {
			return t
		}
	}
	if len(r) > 0 && font.MeasureString(face, string(r[:1])).Ceil() <= width {
		return string(r[:1])
	}
	return ""
}

// captionFile rewrites the side-by-side diff at path with captions.
func captionFile(path string, caps [3]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	img, err := replay.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := replay.EncodePNG(captioned(img, caps))
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
