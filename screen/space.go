package screen

import "fmt"

// SpaceKind names a family of model coordinate spaces.
type SpaceKind uint8

const (
	// ImageSpace: pixels of the image that was sent (Anthropic, OpenAI).
	ImageSpace SpaceKind = iota
	// GridSpace: a normalized grid over the image, 0..Grid-1 (Gemini: 1000).
	GridSpace
	// ResizedSpace: pixels of an image of size Resized that the model
	// reasoned in, such as UI-TARS's smart-resized image.
	ResizedSpace
)

// Space is the coordinate space of a model's actions. The zero Space is
// ImageSpace.
type Space struct {
	Kind    SpaceKind `json:"kind"`
	Grid    int       `json:"grid,omitzero"`    // GridSpace: cells per axis, e.g. 1000
	Resized Size      `json:"resized,omitzero"` // ResizedSpace: the model's image size
}

// Image is the space of the sent image's pixels.
var Image = Space{Kind: ImageSpace}

// Grid1000 is Gemini's 0..999 normalized grid.
var Grid1000 = Space{Kind: GridSpace, Grid: 1000}

func (s Space) String() string {
	switch s.Kind {
	case GridSpace:
		return fmt.Sprintf("grid%d", s.Grid)
	case ResizedSpace:
		return fmt.Sprintf("resized%dx%d", s.Resized.W, s.Resized.H)
	}
	return "image"
}
