package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// providerCase scripts one provider's fake endpoint to click the given
// targets, each given in the sent image's pixels, and returns the model
// talking to it.
type providerCase struct {
	name     string
	provider string // for screen.RuleFor
	model    string
	newModel func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model
}

// toGrid converts an image pixel to the 0..999 grid cell whose mapping
// lands on that pixel's centre.
func toGrid(p actions.Point, sent screen.Size) actions.Point {
	return actions.Pt(math.Floor((p.X+0.5)*1000/float64(sent.W)), math.Floor((p.Y+0.5)*1000/float64(sent.H)))
}

func clickAt(p actions.Point) actions.Action {
	return actions.Action{Kind: actions.Click, HasAt: true, At: p}
}

var providerCases = []providerCase{
	{
		name: "anthropic computer_20250124, parallel tool_use", provider: "anthropic", model: "claude-sonnet-4-5",
		newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
			var content []json.RawMessage
			content = append(content, anthropictest.Text("Clicking every target."))
			for i, p := range clicks {
				content = append(content, anthropictest.Action(t, fmt.Sprintf("toolu_%02d", i), anthropic.Computer20250124, clickAt(p)))
			}
			srv := anthropictest.NewServer(t, anthropictest.Reply{Content: content},
				anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
			m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "test", Model: "claude-sonnet-4-5", Display: sent})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	{
		name: "openai GA computer, one batch", provider: "openai", model: "gpt-5.4",
		newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
			var as []actions.Action
			for _, p := range clicks {
				as = append(as, clickAt(p))
			}
			srv := openaitest.NewServer(t,
				openaitest.Reply{Output: []json.RawMessage{openaitest.ComputerCall("call_1", openaitest.Actions(t, as...)...)}},
				openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
			m, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "gpt-5.4", Display: sent})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	{
		name: "openai computer-use-preview, one action per call", provider: "openai", model: "computer-use-preview",
		newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
			var out []json.RawMessage
			for i, p := range clicks {
				out = append(out, openaitest.PreviewCall(fmt.Sprintf("call_%d", i), openaitest.Actions(t, clickAt(p))[0]))
			}
			srv := openaitest.NewServer(t, openaitest.Reply{Output: out},
				openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
			m, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "computer-use-preview", Display: sent})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	{
		name: "gemini 3.5 functions on the 0..999 grid", provider: "gemini", model: "gemini-3.5-flash",
		newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
			return geminiModel(t, sent, clicks, "gemini-3.5-flash", gemini.Functions35)
		},
	},
	{
		name: "gemini legacy click_at on the 0..999 grid", provider: "gemini", model: "gemini-2.5-computer-use-preview",
		newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
			return geminiModel(t, sent, clicks, "gemini-2.5-computer-use-preview", gemini.FunctionsLegacy)
		},
	},
}

// toResized converts an image pixel to the smart-resized image's pixel
// whose mapping lands on that pixel's centre.
func toResized(p actions.Point, sent screen.Size) actions.Point {
	r := screen.SmartResize(sent)
	return actions.Pt(math.Floor((p.X+0.5)*float64(r.W)/float64(sent.W)), math.Floor((p.Y+0.5)*float64(r.H)/float64(sent.H)))
}

func init() {
	providerCases = append(providerCases,
		providerCase{
			name: "ui-tars 1.5 text actions in smart-resize space", provider: "uitars", model: "ui-tars-1.5-7b",
			newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
				var as []actions.Action
				for _, p := range clicks {
					as = append(as, clickAt(toResized(p, sent)))
				}
				srv := chattest.NewServer(t, chattest.UITARSActions(t, "I see ten targets; clicking each.", as...),
					chattest.Reply{Content: "Thought: all done.\nAction: finished(content='Clicked every target.')"})
				m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "ui-tars-1.5-7b", Display: sent})
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
		},
		providerCase{
			name: "open model with function calling, parallel tool_calls", provider: "", model: "qwen2.5-vl",
			newModel: func(t *testing.T, sent screen.Size, clicks []actions.Point) harness.Model {
				var calls []chattest.ToolCall
				for i, p := range clicks {
					calls = append(calls, chattest.Computer(fmt.Sprintf("call_%d", i), fmt.Sprintf(`{"type":"click","x":%g,"y":%g}`, p.X, p.Y)))
				}
				srv := chattest.NewServer(t, chattest.Reply{ToolCalls: calls}, chattest.Reply{Content: "Done."})
				m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "qwen2.5-vl", Dialect: chat.Functions, Display: sent})
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
		})
}

func geminiModel(t *testing.T, sent screen.Size, clicks []actions.Point, model string, set gemini.FunctionSet) harness.Model {
	var calls []geminitest.Call
	for i, p := range clicks {
		c, err := geminitest.CallOf(set, fmt.Sprintf("fc_%d", i), clickAt(toGrid(p, sent)))
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	srv := geminitest.NewServer(t, geminitest.Turn{Text: "Clicking every target.", Calls: calls}.Reply(), geminitest.Text("Done."))
	m, err := gemini.New(gemini.Config{BaseURL: srv.URL, APIKey: "test", Model: model, Display: sent, Functions: set})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProvidersClickWhereTheyMeant runs each provider's real adapter against
// a fake endpoint that answers in the provider's own wire format, on a real
// Chromium at DPR 2. The fake clicks the targets found in a screenshot of
// the size the provider's image rule picks, in the provider's coordinate
// space; the page reports which elements were pressed.
func TestProvidersClickWhereTheyMeant(t *testing.T) {
	b := browser(t)
	viewport := screen.Size{W: 1280, H: 800}
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			log := &hitLog{}
			srv := serve(t, map[string]http.HandlerFunc{"POST /hit": log.handler})
			d, err := b.NewDisplay(t.Context(), cdp.DisplayConfig{Viewport: viewport, DPR: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close(context.Background()) })
			navigate(t, d, srv.URL+"/targets.html")

			sent := screen.RuleFor(pc.provider, pc.model).Fit(viewport)
			// Find the targets where the model will see them.
			shot, err := d.Capture(t.Context(), screen.CaptureOptions{Size: sent})
			if err != nil {
				t.Fatal(err)
			}
			found := findTargets(t, shot.Data)
			ids := sortedKeys(found)
			var clicks []actions.Point
			for _, id := range ids {
				clicks = append(clicks, found[id])
			}
			if len(ids) != len(targets) {
				t.Fatalf("found targets %v in the %v screenshot, want all %d", ids, sent, len(targets))
			}

			out, err := harness.Run(t.Context(), harness.Config{Model: pc.newModel(t, sent, clicks), Display: d,
				Policy: allowAll(), Capture: screen.CaptureOptions{Size: sent}, MaxSteps: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !out.OK() || out.Failed != 0 {
				t.Fatalf("outcome = %+v, want end_turn with no failed calls", out)
			}
			var got []string
			for _, h := range log.all() {
				got = append(got, h.ID)
			}
			sort.Strings(got)
			if !slices.Equal(got, ids) {
				t.Errorf("sent %v: elements hit = %v, want %v (hits %+v)", sent, got, ids, log.all())
			}
		})
	}
}
