package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// TestChromiumOverBothTransports drives the demo app in a real Chromium
// through an MCP client: a screenshot, a click into the name field, typing,
// a click on Check in, and a fresh image that shows the change; the demo
// app confirms the check-in arrived.
func TestChromiumOverBothTransports(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
	ctx := t.Context()
	b, err := cdp.Launch(ctx, cdp.Config{Viewport: screen.Size{W: 1280, H: 800}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })

	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			app := demo.NewServer()
			base, stop, err := app.Serve(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			u, _ := url.Parse(base)
			policy := actions.Standard()
			policy.Hosts = []string{u.Host}
			srv, err := New(Config{
				NewDisplay: func(ctx context.Context) (Display, error) { return b.NewDisplay(ctx, cdp.DisplayConfig{}) },
				StartURL:   base + "/",
				Policy:     policy,
				Capture:    screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}},
				Logger:     slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close(context.Background()) })
			f := &fixture{srv: srv}
			cs := f.connect(t, transport)

			first, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
			if errText != "" || len(images) != 1 || first.Image != (screen.Size{W: 1024, H: 640}) {
				t.Fatalf("screenshot: %+v, %d images, error %q", first, len(images), errText)
			}
			before := images[0]
			// The demo's name field and Check in button, in the 1024x640 image.
			n, _, errText := call(t, cs, ToolComputer, map[string]any{"frame_id": first.FrameID, "actions": []any{
				map[string]any{"kind": "click", "at": map[string]any{"x": 182, "y": 113}},
				map[string]any{"kind": "type", "text": "Ada Lovelace"},
				map[string]any{"kind": "click", "at": map[string]any{"x": 386, "y": 113}},
			}})
			if errText != "" || n.Ran != 3 {
				t.Fatalf("click, type, click: ran %d, error %q", n.Ran, errText)
			}
			after, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
			if errText != "" || len(images) != 1 || after.FrameID == first.FrameID {
				t.Fatalf("second screenshot: %+v, error %q, want a fresh frame", after, errText)
			}
			if bytes.Equal(before, images[0]) {
				t.Errorf("the screenshot after checking in is the same image as before")
			}
			if got := app.State()["checkin"]; got != "Ada Lovelace" {
				t.Errorf("demo app checked in %q, want %q", got, "Ada Lovelace")
			}
			// Navigating is allowed to the demo's host only.
			if _, _, errText := call(t, cs, ToolNavigate, map[string]any{"url": base + "/?again"}); errText != "" {
				t.Errorf("navigate within the demo: %s", errText)
			}
		})
	}
}

// TestRefsOnChromium: a snapshot names the page's elements with refs
// (never the password's value); a click and typing through refs reach
// them, the button below the fold scrolled into view first; each
// result says where its refs resolved; a ref whose element is gone, and
// one no snapshot gave, are refused in words; a navigation makes the old
// refs stale.
func TestRefsOnChromium(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
	ctx := t.Context()
	b, err := cdp.Launch(ctx, cdp.Config{Viewport: screen.Size{W: 800, H: 600}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	srv, err := New(Config{
		NewDisplay: func(ctx context.Context) (Display, error) { return b.NewDisplay(ctx, cdp.DisplayConfig{}) },
		StartURL:   "data:text/html," + url.PathEscape(screentest.RefsPage),
		Policy:     actions.Standard(),
		Capture:    screen.CaptureOptions{Size: screen.Size{W: 640, H: 480}},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs := (&fixture{srv: srv}).connect(t, "memory")

	snapshot := func() string {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolSnapshot, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("snapshot = %v, %+v", err, res)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	ref := func(snap, line string) string {
		t.Helper()
		m := regexp.MustCompile(regexp.QuoteMeta(line) + `[^\n]*\[ref=(e\d+)\]`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("snapshot has no %q with a ref:\n%s", line, snap)
		}
		return m[1]
	}
	snap := snapshot()
	t.Logf("snapshot:\n%s", snap)
	for _, want := range []string{`heading "Sign up" [level=1]`, `textbox "Full name" [required]`, `textbox "PIN"`, `button "Send"`} {
		if !strings.Contains(snap, want) {
			t.Errorf("snapshot lacks %q", want)
		}
	}
	name, pin, send, gone := ref(snap, `textbox "Full name"`), ref(snap, `textbox "PIN"`), ref(snap, `button "Send"`), ref(snap, `button "Vanish"`)

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolComputer, Arguments: map[string]any{"actions": []any{
		map[string]any{"kind": "click", "at": map[string]any{"ref": name}},
		map[string]any{"kind": "type", "text": "Ada"},
		map[string]any{"kind": "click", "at": map[string]any{"ref": pin}},
		map[string]any{"kind": "type", "text": "4711"},
	}}})
	if err != nil || res.IsError {
		t.Fatalf("type through refs = %v, %+v", err, res)
	}
	n := lastNote(t, res)
	if n.Ran != 4 || len(n.Notes) < 2 || !strings.Contains(n.Notes[0], name+` (textbox "Full name") is at (`) {
		t.Errorf("type through refs: %+v, want 4 ran and where each ref resolved", n)
	}
	if snap := snapshot(); !strings.Contains(snap, `textbox "Full name" [required] [ref=`+name+`]: Ada`) || strings.Contains(snap, "4711") {
		t.Errorf("snapshot after typing: want the name's value, and never the PIN's:\n%s", snap)
	}
	// Send is below the fold: it is scrolled into view, then clicked.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolComputer, Arguments: map[string]any{"kind": "click", "at": map[string]any{"ref": send}}})
	if err != nil || res.IsError {
		t.Fatalf("click on %s = %v, %+v", send, err, res)
	}
	if n := lastNote(t, res); n.Ran != 1 || !strings.Contains(strings.Join(n.Notes, " "), send+` (button "Send") is at (`) {
		t.Errorf("click on the ref below the fold: %+v", n)
	}
	if snap := snapshot(); !strings.Contains(snap, `sent Ada`) {
		t.Errorf("the page did not see the click on Send (its title says so):\n%s", snap)
	}
	// An element that left the page, and a ref nobody gave.
	if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"ref": gone}}); errText != "" {
		t.Fatalf("click on Vanish: %s", errText)
	}
	for r, want := range map[string]string{gone: "no longer on the page", "e999": "no snapshot named"} {
		if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"ref": r}}); !strings.Contains(errText, want) {
			t.Errorf("click on %s: error %q, want %q", r, errText, want)
		}
	}
	// A navigation leaves the old refs stale.
	if _, _, errText := call(t, cs, ToolNavigate, map[string]any{"url": "about:blank"}); errText != "" {
		t.Fatal(errText)
	}
	if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"ref": name}}); !strings.Contains(errText, "stale element reference") {
		t.Errorf("click on %s after navigating: error %q, want it stale", name, errText)
	}
}

// lastNote is the JSON note of a tool result.
func lastNote(t *testing.T, res *sdk.CallToolResult) note {
	t.Helper()
	var n note
	if err := json.Unmarshal([]byte(res.Content[len(res.Content)-1].(*sdk.TextContent).Text), &n); err != nil {
		t.Fatal(err)
	}
	return n
}
