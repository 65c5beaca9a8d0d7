package vnc_test

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
)

// Connect to a desktop over a unix socket, capture it at the size a model
// wants, and click. Here the server is a stand-in that paints a 1280x800
// screen blue; desktop.Start runs a real one (Xvnc).
func ExampleDial() {
	dir, _ := os.MkdirTemp("", "vnc-example-")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "rfb.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	stop := vnc.ServeSolid(l, 1280, 800, color.RGBA{0x33, 0x66, 0x99, 0xff})
	defer stop()

	ctx := context.Background()
	d, err := vnc.Dial(ctx, "unix", sock, vnc.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}})
	if err != nil {
		log.Fatal(err)
	}
	f := shot.Frame
	fmt.Printf("%s: %dx%d screen at DPR %g, sent as a %dx%d %s\n", f.ID, f.Viewport.W, f.Viewport.H, f.DPR, f.Sent.W, f.Sent.H, f.Format)

	// The model clicked the middle of the image it saw.
	css, _ := f.ToCSS(actions.Pt(512, 320), screen.Image)
	click := screen.Mapped{Action: actions.Action{Kind: actions.Click, At: css, HasAt: true}}
	fmt.Println("click at", css, "->", d.Perform(ctx, click))

	err = d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "https://example.com"}})
	fmt.Println(errors.Is(err, screen.ErrUnsupported), err)
	// Output:
	// f0001: 1280x800 screen at DPR 1, sent as a 1024x640 png
	// click at (640.625,400.625) -> <nil>
	// true navigate: a desktop has no URL or history of its own (use a browser window on it instead): not supported by this display
}
