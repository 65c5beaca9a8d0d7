package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// A run records its first screenshot, the model's turn, each action with
// its mapped coordinates, and the result with the screenshot after it.
func Example() {
	dir, err := os.MkdirTemp("", "trace-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	w, err := trace.Create(dir)
	if err != nil {
		log.Fatal(err)
	}
	before, after := shot("f0001"), shot("f0002")
	beforeFile, _ := w.WriteShot(before)
	afterFile, _ := w.WriteShot(after)
	click := actions.Action{Kind: actions.Click, At: actions.Pt(320, 100), HasAt: true}
	for _, e := range []trace.Event{
		{Type: trace.TypeRunStart, Task: "open the menu", Model: "fake", Frame: before.Frame, Shot: beforeFile},
		{Type: trace.TypeModelTurn, Step: 1, Text: "Clicking the menu button.", Stop: "tool_use"},
		{Type: trace.TypeCall, Step: 1, CallID: "call_1", Name: "computer"},
		{Type: trace.TypeAction, Step: 1, CallID: "call_1", Action: click, FrameID: "f0001",
			Mapped: screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(640, 200), HasAt: true}}},
		{Type: trace.TypeResult, Step: 1, CallID: "call_1", Ran: 1, Frame: after.Frame, Shot: afterFile},
		{Type: trace.TypeRunEnd, Step: 1, Stop: "end_turn"},
	} {
		if err := w.Write(e); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	evs, err := trace.Read(dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range evs {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%d %s step %d %s", e.Seq, e.Type, e.Step, e.Shot)))
	}
	report, err := trace.WriteReport(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(filepath.Base(report))
	// Output:
	// 1 run_start step 0 shots/f0001.png
	// 2 model_turn step 1
	// 3 call step 1
	// 4 action step 1
	// 5 result step 1 shots/f0002.png
	// 6 run_end step 1
	// report.html
}

// Read returns the complete events of a trace whose writer died in the
// middle of a line, and says what it dropped.
func ExampleRead() {
	dir, err := os.MkdirTemp("", "trace-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	crashed := `{"seq":1,"time":"2026-03-01T12:00:00Z","type":"run_start","task":"t"}` + "\n" +
		`{"seq":2,"time":"2026-03-01T12:00:01Z","type":"model_turn","step":1,"te`
	if err := os.WriteFile(filepath.Join(dir, trace.EventsFile), []byte(crashed), 0o644); err != nil {
		log.Fatal(err)
	}

	evs, err := trace.Read(dir)
	fmt.Println(len(evs), evs[0].Type)
	fmt.Println(errors.Is(err, trace.ErrTruncated))
	// Output:
	// 1 run_start
	// true
}

// shot makes a blank 640x400 screenshot of a 1280x800 viewport.
func shot(id string) screen.Shot {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 640, 400))); err != nil {
		log.Fatal(err)
	}
	return screen.Shot{
		Frame: screen.Frame{ID: id, Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
			Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: screen.Size{W: 1280, H: 800},
			Sent: screen.Size{W: 640, H: 400}, Format: screen.PNG},
		Data: buf.Bytes(),
	}
}
