package screen_test

import (
	"fmt"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// A DPR-2 capture of a 1280x800 viewport, downscaled to 1024x640 for the
// model: one image pixel is 1.25 CSS pixels, whatever the DPR.
func ExampleFrame_ToCSS() {
	f := screen.Frame{
		ID:       "f0001",
		Viewport: screen.Size{W: 1280, H: 800},
		DPR:      2,
		Clip:     actions.Rect{Max: actions.Pt(1280, 800)},
		Capture:  screen.Size{W: 2560, H: 1600},
		Sent:     screen.Size{W: 1024, H: 640},
	}

	css, _ := f.ToCSS(actions.Pt(512, 320), screen.Image)
	fmt.Println("image (512,320) ->", css)

	css, _ = f.ToCSS(actions.Pt(500, 500), screen.Grid1000) // Gemini's grid
	fmt.Println("grid (500,500) ->", css)

	css, _ = f.ToCSS(actions.Pt(1024, 640), screen.Image) // the far edge: the last pixel
	fmt.Println("image (1024,640) ->", css)

	_, err := f.ToCSS(actions.Pt(1100, 20), screen.Image)
	fmt.Println(err)

	fmt.Println("back:", f.FromCSS(actions.Pt(640.625, 400.625)))
	// Output:
	// image (512,320) -> (640.625,400.625)
	// grid (500,500) -> (640.625,400.625)
	// image (1024,640) -> (1279.375,799.375)
	// point (1100,20) is outside the 1024x640 screenshot
	// back: (512,320)
}

// Map converts a whole action, here a Gemini scroll on its 0..999 grid,
// whose magnitude is normalized like its coordinates.
func ExampleFrame_Map() {
	f := screen.Frame{
		Viewport: screen.Size{W: 1280, H: 800},
		Clip:     actions.Rect{Max: actions.Pt(1280, 800)},
		Sent:     screen.Size{W: 1024, H: 640},
	}
	a := actions.Action{Kind: actions.Scroll, At: actions.Pt(500, 250), HasAt: true, DeltaY: 800}
	m, err := f.Map(a, screen.Grid1000)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.At, m.DeltaY)

	drag := actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(0, 0), actions.Pt(1000, 1001)}}
	_, err = f.Map(drag, screen.Grid1000)
	fmt.Println(err)
	// Output:
	// (640.625,200.625) 640
	// path[1]: point (1000,1001) is outside the 1000x1000 grid over the screenshot: x and y must be 0..999
}

func ExampleSizeRule_Fit() {
	r := screen.RuleFor("anthropic", "claude-sonnet-4-5")
	for _, s := range []screen.Size{{W: 1280, H: 800}, {W: 1920, H: 1080}, {W: 2560, H: 1600}, {W: 2000, H: 2000}} {
		fit := r.Fit(s)
		fmt.Printf("%dx%d -> %dx%d\n", s.W, s.H, fit.W, fit.H)
	}
	// Output:
	// 1280x800 -> 1280x800
	// 1920x1080 -> 1456x819
	// 2560x1600 -> 1384x865
	// 2000x2000 -> 1092x1092
}

func ExampleRuleFor() {
	for _, pm := range [][2]string{
		{"anthropic", "claude-opus-4-7-20260416"},
		{"openai", "computer-use-preview-2025-03-11"},
		{"gemini", "gemini-3.5-flash"},
		{"", ""},
	} {
		r := screen.RuleFor(pm[0], pm[1])
		fit := r.Fit(screen.Size{W: 1920, H: 1080})
		fmt.Printf("%s: %dx%d\n", r.Name, fit.W, fit.H)
	}
	// Output:
	// anthropic-large: 1920x1080
	// openai-preview: 1360x765
	// gemini: 1440x810
	// default: 1360x765
}

// A UI-TARS model answers in pixels of the image its server resized: map
// its actions in that space.
func ExampleSmartResize() {
	sent := screen.Size{W: 1280, H: 800}
	space := screen.Space{Kind: screen.ResizedSpace, Resized: screen.SmartResize(sent)}
	fmt.Println(space)
	// Output:
	// resized1288x812
}

func ExampleImageTokens() {
	for _, p := range []string{"anthropic", "openai", "gemini", "uitars"} {
		fmt.Println(p, screen.ImageTokens(p, screen.Size{W: 1280, H: 800}))
	}
	// Output:
	// anthropic 1366
	// openai 1105
	// gemini 1032
	// uitars 1334
}
