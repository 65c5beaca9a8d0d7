package openai

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // image.DecodeConfig of JPEG screenshots
	"image/png"

	"github.com/spotter-harness/spotter/screen"
)

// picture is one screenshot as sent: a data URL and the image's size.
type picture struct {
	url  string
	size screen.Size
}

// pictureOf encodes a screenshot as a data URL. The size comes from the
// Frame, or from the image itself if the Frame does not say.
func pictureOf(s *screen.Shot) (picture, error) {
	if len(s.Data) == 0 {
		return picture{}, fmt.Errorf("screenshot %s has no image data", s.Frame.ID)
	}
	size := s.Frame.Sent
	if size.Empty() {
		c, _, err := image.DecodeConfig(bytes.NewReader(s.Data))
		if err != nil {
			return picture{}, fmt.Errorf("screenshot %s: %v", s.Frame.ID, err)
		}
		size = screen.Size{W: c.Width, H: c.Height}
	}
	return picture{url: dataURL(s.Frame.Format.MIME(), s.Data), size: size}, nil
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// placeholderURL is the image of a computer_call_output whose screenshot
// is no longer sent (Config.Context): the output must hold an image, so it
// holds the smallest one that still says "no screenshot here", a 16x10
// grey PNG, which is billed as one tile (or one patch) instead of a
// screenshot's many.
var placeholderURL = dataURL("image/png", greyPNG(screen.Size{W: 16, H: 10}))

// greyPNG returns a uniform grey PNG of size s.
func greyPNG(s screen.Size) []byte {
	img := image.NewGray(image.Rect(0, 0, max(s.W, 1), max(s.H, 1)))
	for i := range img.Pix {
		img.Pix[i] = color.Gray{Y: 0x80}.Y
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		// Encoding an in-memory image to a buffer cannot fail.
		return nil
	}
	return b.Bytes()
}
