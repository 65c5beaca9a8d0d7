package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// elementBox is where an approval card draws the frame of the element an
// action named by its reference, in the pixels of the screenshot under
// it, and the marker's centre.
type elementBox struct {
	MinX, MinY, MaxX, MaxY float64
	MarkerX, MarkerY       float64
	Where                  string
}

// TestPanelElementFrame: an MCP client without vision clicks the shop's
// Buy button by its snapshot reference; the purchase rule asks, and the
// approval card in the panel frames the button (the request's element) on
// the screenshot, with the marker inside the frame; the operator approves
// and the shop sees the purchase.
func TestPanelElementFrame(t *testing.T) {
	env := startPanel(t)
	env.login(t)

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "text-only", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: env.url + "/mcp", HTTPClient: &http.Client{Transport: bearerToken(panelToken)}}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	snap, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "snapshot", Arguments: map[string]any{}})
	if err != nil || snap.IsError {
		t.Fatalf("snapshot = %v %+v", err, snap)
	}
	text := snap.Content[0].(*sdk.TextContent).Text
	m := regexp.MustCompile(`button "Buy" \[ref=(e\d+)\]`).FindStringSubmatch(text)
	id := regexp.MustCompile(`session: (\S+)`).FindStringSubmatch(text)
	if m == nil || id == nil {
		t.Fatalf("snapshot names no Buy button or no session:\n%s", text)
	}
	clicked := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer",
			Arguments: map[string]any{"kind": "click", "at": map[string]any{"ref": m[1]}}})
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		clicked <- res
	}()

	env.do(t, "open the MCP session", 30*time.Second, chromedp.Navigate(env.url+"/#/session/"+id[1]))
	ctx, cancel := context.WithTimeout(env.tab, 60*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.Poll[elementBox](`(() => {
		const c = document.querySelector('#approval-list .approval');
		if (!c) return null;
		const img = c.querySelector('.a-shot'), fr = c.querySelector('.a-element'), mk = c.querySelector('.a-marker');
		if (!img.complete || !img.naturalWidth || fr.hidden || mk.hidden) return null;
		const ir = img.getBoundingClientRect(), r = fr.getBoundingClientRect(), mr = mk.getBoundingClientRect();
		if (!ir.width || !r.width) return null;
		const sx = img.naturalWidth / ir.width, sy = img.naturalHeight / ir.height;
		return {
			MinX: (r.left - ir.left) * sx, MinY: (r.top - ir.top) * sy,
			MaxX: (r.right - ir.left) * sx, MaxY: (r.bottom - ir.top) * sy,
			MarkerX: (mr.left + mr.width / 2 - ir.left) * sx, MarkerY: (mr.top + mr.height / 2 - ir.top) * sy,
			Where: c.querySelector('.a-where').textContent,
		};
	})()`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("wait for the approval card with the element framed: %v\n%s", err, env.diagnose(t))
	}
	t.Logf("element framed at (%.1f, %.1f)-(%.1f, %.1f), marker at (%.1f, %.1f); %q", b.MinX, b.MinY, b.MaxX, b.MaxY, b.MarkerX, b.MarkerY, b.Where)
	// The MCP session's screenshots are its 1280x800 viewport, pixel for
	// pixel: the frame is the button's box.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"left", b.MinX, float64(buyButton.Min.X)}, {"top", b.MinY, float64(buyButton.Min.Y)},
		{"right", b.MaxX, float64(buyButton.Max.X)}, {"bottom", b.MaxY, float64(buyButton.Max.Y)}} {
		if math.Abs(c.got-c.want) > 2 {
			t.Errorf("the element's frame: %s edge at %.1f, want the Buy button's %.0f", c.name, c.got, c.want)
		}
	}
	if b.MarkerX < b.MinX || b.MarkerX > b.MaxX || b.MarkerY < b.MinY || b.MarkerY > b.MaxY {
		t.Errorf("the marker at (%.1f, %.1f) is outside the element's frame", b.MarkerX, b.MarkerY)
	}
	if want := fmt.Sprintf("framed at (%d, %d)-(%d, %d)", buyButton.Min.X, buyButton.Min.Y, buyButton.Max.X, buyButton.Max.Y); !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(b.Where) {
		t.Errorf("the card says %q, want it to name the frame %s", b.Where, want)
	}
	if n := env.bought.Load(); n != 0 {
		t.Fatalf("the shop saw %d purchases before the approval, want 0", n)
	}

	env.do(t, "approve", 10*time.Second, chromedp.Click(`#approval-list .approval .approve`))
	select {
	case res := <-clicked:
		var n struct{ Ran int }
		if res.IsError || json.Unmarshal([]byte(res.Content[len(res.Content)-1].(*sdk.TextContent).Text), &n) != nil || n.Ran != 1 {
			t.Errorf("the approved click by ref = %+v, want it run", res)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the approved click did not answer within 60s")
	}
	if n := env.bought.Load(); n != 1 {
		t.Errorf("the shop saw %d purchases after the approval, want 1", n)
	}
}
