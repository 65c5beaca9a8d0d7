package chat

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/jpeg" // image.DecodeConfig of JPEG screenshots
	_ "image/png"  // image.DecodeConfig of PNG screenshots

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
	url := "data:" + s.Frame.Format.MIME() + ";base64," + base64.StdEncoding.EncodeToString(s.Data)
	return picture{url: url, size: size}, nil
}
