package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
)

// The context section runs one scripted computer-use task through each
// provider adapter, against the adapter's fake endpoint (the *test
// packages, in the provider's wire format), once per context strategy, and
// prices every request the fake received (contextcost.go).

// ContextSteps is the length of the scripted task: this many turns with
// one call each, then a turn that ends the task.
const ContextSteps = 50

// ContextCost is what a context figure adds to Figure: the provider, the
// strategy, and what the task's requests carried and cost.
type ContextCost struct {
	Provider string `json:"provider"`
	Strategy string `json:"strategy"`
	Model    string `json:"model"`
	Policy   string `json:"policy"`
	Requests int    `json:"requests"`
	// Images counts the screenshots sent in full, over every request
	// (not OpenAI's 16x10 placeholder images).
	Images int `json:"images"`
	// InputTokens are the input tokens the requests carried, before any
	// cache price: ImageTokens of images, the rest text.
	InputTokens int `json:"input_tokens"`
	ImageTokens int `json:"image_tokens"`
	// CacheReadTokens and CacheWriteTokens are the input tokens read from
	// and written to the provider's prompt cache, as its published rules
	// say they would be; the rest of InputTokens was billed at the input
	// price.
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	// RequestBytes are the request bodies' bytes over the task, and
	// MaxRequestBytes the largest.
	RequestBytes    int `json:"request_bytes"`
	MaxRequestBytes int `json:"max_request_bytes"`
	// Unchanged counts the steps whose screenshot was the same as the one
	// before (the script's, for every strategy).
	Unchanged int `json:"unchanged_steps"`
	// FloorTokens is what any strategy pays at least: every distinct
	// screenshot of the task sent once, at the input price, and nothing
	// else.
	FloorTokens int `json:"floor_tokens"`
}

// contextStrategies are the strategies every provider is run with, in
// order.
var contextStrategies = []string{"spotter", "send-all", "reference"}

// contextProvider is one adapter, run through the task.
type contextProvider struct {
	name, model string
	cache       cacheRules
	// policy is the strategy's ctxpolicy.Policy and the request breakpoints
	// to price it with (Anthropic's reference places its own).
	policy func(strategy string) ctxpolicy.Policy
	// run runs the task through the adapter with policy and returns the
	// request bodies the fake received. With restart, every turn is taken
	// by a new Model restored from the last one's saved state.
	run func(ctx context.Context, task *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error)
}

// sendAll sends every screenshot on every request.
var sendAll = ctxpolicy.Policy{Keep: ctxpolicy.All, Repeats: true}

func contextProviders() []contextProvider {
	return []contextProvider{
		{name: "anthropic", model: anthropic.DefaultModel, cache: anthropicCache,
			policy: func(s string) ctxpolicy.Policy {
				switch s {
				case "send-all":
					return sendAll
				case "reference": // the computer-use demo: 3 newest images, removed 3 at a time
					return ctxpolicy.Policy{Keep: 3, Chunk: 3, Repeats: true}
				}
				return ctxpolicy.Policy{}
			},
			run: runAnthropic},
		{name: "openai", model: openai.DefaultModel, cache: openaiCache,
			policy: func(s string) ctxpolicy.Policy {
				if s == "spotter" {
					return ctxpolicy.Policy{}
				}
				return sendAll // the CUA sample app sends the whole conversation
			},
			run: runOpenAI},
		{name: "gemini", model: gemini.DefaultModel, cache: geminiCache,
			policy: func(s string) ctxpolicy.Policy {
				switch s {
				case "send-all":
					return sendAll
				case "reference": // screenshots of the 3 newest turns
					return ctxpolicy.Policy{Keep: 3, Chunk: 1, Repeats: true}
				}
				return ctxpolicy.Policy{}
			},
			run: runGemini},
		{name: "chat", model: "ui-tars-1.5-7b", cache: noCache,
			policy: func(s string) ctxpolicy.Policy {
				switch s {
				case "send-all":
					return sendAll
				case "reference": // UI-TARS deployments: the 5 newest images
					return ctxpolicy.Policy{Keep: 5, Chunk: 1, Repeats: true}
				}
				return ctxpolicy.Policy{}.Uncached() // what the chat adapter makes of the zero Policy
			},
			run: runChat},
	}
}

// cost runs task through p's adapter with policy and prices its requests
// as strategy's (which places Anthropic's reference breakpoints).
func (p contextProvider) cost(ctx context.Context, task *contextTask, strategy string, policy ctxpolicy.Policy) (ContextCost, float64, error) {
	bodies, err := p.run(ctx, task, policy, false)
	if err != nil {
		return ContextCost{}, 0, fmt.Errorf("%s %s: %w", p.name, strategy, err)
	}
	c, v, err := price(p.name, strategy, bodies, p.cache)
	if err != nil {
		return ContextCost{}, 0, fmt.Errorf("%s %s: %w", p.name, strategy, err)
	}
	c.Provider, c.Strategy, c.Model, c.Policy, c.Unchanged = p.name, strategy, p.model, policy.String(), task.unchanged
	c.FloorTokens = (len(task.shots) - task.unchanged) * screen.ImageTokens(p.cache.tokens, task.size)
	return c, v, nil
}

// contextSection reports one figure per provider and strategy.
func (r *runner) contextSection(ctx context.Context) error {
	figs, err := ContextFigures(ctx)
	for _, f := range figs {
		r.report(f)
	}
	return err
}

// ContextFigures runs the scripted task through every adapter with every
// strategy and returns one figure each: Value is the billed-equivalent
// input tokens of the whole task (input tokens at the input price, cache
// writes and reads at the provider's multipliers), compared with
// send-all's.
func ContextFigures(ctx context.Context) ([]Figure, error) {
	var figs []Figure
	for _, p := range contextProviders() {
		task := newContextTask(p.name, p.model, ContextSteps)
		costs := map[string]*ContextCost{}
		values := map[string]float64{}
		for _, s := range contextStrategies {
			c, v, err := p.cost(ctx, task, s, p.policy(s))
			if err != nil {
				return figs, err
			}
			costs[s], values[s] = &c, v
		}
		for _, s := range contextStrategies {
			f := Figure{Section: "context", Name: p.name + " " + s + " billed-equivalent input tokens",
				Unit: "tokens", Value: values[s], ContextCost: costs[s]}
			if s != "send-all" {
				f.against(Figure{Name: p.name + " send-all", Value: values["send-all"]})
			}
			if s == "spotter" {
				f.target(">= 5x fewer than send-all and <= reference",
					values["send-all"] >= 5*values[s] && values[s] <= values["reference"])
				f.Note = fmt.Sprintf("reference / spotter %.2fx; send-all / floor %.2fx, the most any strategy could save",
					values["reference"]/values[s], values["send-all"]/float64(costs[s].FloorTokens))
			}
			figs = append(figs, f)
		}
	}
	return figs, nil
}

// contextTask is the scripted task for one provider: the screenshots of
// each step at the provider's image size, and the actions that lead from
// one to the next.
type contextTask struct {
	provider string
	size     screen.Size
	shots    []*screen.Shot   // shots[0] is the first; shots[i+1] follows step i
	steps    []actions.Action // in image pixels
	says     []string
	// unchanged counts the steps after which the screen is as before.
	unchanged int
}

// unchangedSteps are the steps whose action leaves the screen as it was:
// waits for a page that had already settled, and a scroll at the bottom of
// a page. A real task has such steps; the script has 4 in 50.
var unchangedSteps = map[int]bool{9: true, 21: true, 33: true, 45: true}

// contextImages caches the screens of each size: every strategy of a
// provider sends the same screenshots.
var contextImages sync.Map // screen.Size -> [][]byte

func newContextTask(provider, model string, steps int) *contextTask {
	size := screen.RuleFor(provider, model).Fit(modelSize)
	if provider == "chat" {
		size = screen.RuleFor("uitars", model).Fit(modelSize)
	}
	t := &contextTask{provider: provider, size: size}
	screens := contextScreens(size)
	state := 0
	t.shots = append(t.shots, t.shot(screens, 0, state))
	rng := rand.New(rand.NewPCG(17, 50))
	for i := range steps {
		var a actions.Action
		pt := actions.Pt(float64(40+rng.IntN(size.W-80)), float64(40+rng.IntN(size.H-80)))
		switch {
		case unchangedSteps[i]:
			a = actions.Action{Kind: actions.Wait, Duration: waitFor}
			t.unchanged++
			t.says = append(t.says, "The page may still be loading; waiting a moment.")
		case i%5 == 1:
			a = actions.Action{Kind: actions.Type, Text: fmt.Sprintf("Field value number %d", i)}
			t.says = append(t.says, fmt.Sprintf("Typing the value for field %d of the form.", i))
			state++
		case i%5 == 3:
			a = actions.Action{Kind: actions.Scroll, At: pt, HasAt: true, DeltaY: 3 * anthropic.PixelsPerScrollClick}
			t.says = append(t.says, "Scrolling down to see the rest of the form.")
			state++
		default:
			a = actions.Action{Kind: actions.Click, At: pt, HasAt: true, Button: actions.Left}
			t.says = append(t.says, fmt.Sprintf("Clicking the next control of the form (step %d).", i+1))
			state++
		}
		t.steps = append(t.steps, a)
		t.shots = append(t.shots, t.shot(screens, i+1, state))
	}
	return t
}

// waitFor is how long the script's waits wait: a whole second, which every
// provider's wait can say.
const waitFor = 1e9

func (t *contextTask) shot(screens [][]byte, i, state int) *screen.Shot {
	return &screen.Shot{
		Frame: screen.Frame{ID: fmt.Sprintf("f%04d", i+1), Viewport: modelSize, DPR: 1, Capture: t.size, Sent: t.size,
			Format: screen.PNG, URL: "https://shop.test/checkout"},
		Data: screens[state],
	}
}

// contextScreens returns ContextSteps+1 distinct screens of size s: a page
// of blocks and lines of "text", a little different each time, encoded as
// PNG with about the bytes of a real page's screenshot.
func contextScreens(s screen.Size) [][]byte {
	if v, ok := contextImages.Load(s); ok {
		return v.([][]byte)
	}
	var out [][]byte
	for i := range ContextSteps + 1 {
		img := image.NewRGBA(image.Rect(0, 0, s.W, s.H))
		for p := range img.Pix {
			img.Pix[p] = 0xff
		}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		fill := func(x0, y0, x1, y1 int, c color.RGBA) {
			for y := max(y0, 0); y < min(y1, s.H); y++ {
				for x := max(x0, 0); x < min(x1, s.W); x++ {
					img.SetRGBA(x, y, c)
				}
			}
		}
		fill(0, 0, s.W, 56, color.RGBA{R: 0x22, G: 0x44, B: 0x88, A: 0xff}) // header
		for b := range 6 {                                                  // panels and buttons
			x, y := rng.IntN(s.W-200), 80+rng.IntN(s.H-160)
			fill(x, y, x+80+rng.IntN(200), y+24+rng.IntN(60), color.RGBA{R: uint8(40 * b), G: 0xa0, B: uint8(255 - 30*b), A: 0xff})
		}
		for y := 90; y < s.H-20; y += 24 { // lines of text: words of letter-like strokes
			for x := 24; x < s.W-120; {
				w := 8 + rng.IntN(60)
				for dx := 0; dx < w; dx += 2 + rng.IntN(2) {
					top := rng.IntN(4)
					fill(x+dx, y+top, x+dx+1, y+10, color.RGBA{R: 0x30, G: 0x30, B: 0x30, A: 0xff})
					fill(x+dx+1, y+top+rng.IntN(6), x+dx+2, y+10, color.RGBA{R: 0x90, G: 0x90, B: 0x90, A: 0xff})
				}
				x += w + 6 + rng.IntN(8)
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			panic(err) // cannot happen: an in-memory image to a buffer
		}
		out = append(out, b.Bytes())
	}
	v, _ := contextImages.LoadOrStore(s, out)
	return v.([][]byte)
}

// runTask drives a Model made by newModel through the task: the first
// screenshot, then one result per call of each turn, each with the next
// screenshot. With restart, each turn after the first is taken by a new
// Model that restores the last one's state, as after a crash.
func runTask(ctx context.Context, newModel func() (harness.Model, error), t *contextTask, restart bool) error {
	m, err := newModel()
	if err != nil {
		return err
	}
	turn, err := m.Next(ctx, harness.Input{Task: "Fill in the checkout form and submit it.", Shot: t.shots[0]})
	for i := 0; err == nil && turn.Stop == harness.StopToolUse; i++ {
		if i >= len(t.steps) {
			return fmt.Errorf("the model asked for more than %d steps", len(t.steps))
		}
		var in harness.Input
		for _, c := range turn.Calls {
			if c.DecodeErr != nil {
				return fmt.Errorf("step %d: call %s: %w", i, c.ID, c.DecodeErr)
			}
			in.Results = append(in.Results, harness.Result{CallID: c.ID, Shot: t.shots[i+1], Ran: len(c.Actions)})
		}
		if restart {
			if m, err = restore(m, newModel); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		turn, err = m.Next(ctx, in)
	}
	return err
}

// restore saves m's state and restores it into a new Model.
func restore(m harness.Model, newModel func() (harness.Model, error)) (harness.Model, error) {
	st, ok := m.(harness.Stateful)
	if !ok {
		return nil, fmt.Errorf("%T cannot save its state", m)
	}
	state, err := st.MarshalState()
	if err != nil {
		return nil, err
	}
	next, err := newModel()
	if err != nil {
		return nil, err
	}
	if err := next.(harness.Stateful).UnmarshalState(state); err != nil {
		return nil, err
	}
	return next, nil
}

// fakeTB stands in for a *testing.T for the fakes: it collects their
// complaints and cleanups.
type fakeTB struct {
	mu      sync.Mutex
	errs    []string
	cleanup []func()
}

func (*fakeTB) Helper() {}
func (tb *fakeTB) Errorf(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, fmt.Sprintf(format, args...))
}
func (tb *fakeTB) Fatalf(format string, args ...any) { tb.Errorf(format, args...) }
func (tb *fakeTB) Cleanup(f func())                  { tb.cleanup = append(tb.cleanup, f) }

// close runs the cleanups and returns what the fake complained of.
func (tb *fakeTB) close() error {
	for i := len(tb.cleanup) - 1; i >= 0; i-- {
		tb.cleanup[i]()
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.errs) > 0 {
		return fmt.Errorf("the fake endpoint: %s", strings.Join(tb.errs, "; "))
	}
	return nil
}

var quietLog = slog.New(slog.DiscardHandler)

func runAnthropic(ctx context.Context, t *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error) {
	tb := &fakeTB{}
	v := anthropic.ToolVersionFor(anthropic.DefaultModel)
	var replies []anthropictest.Reply
	for i, a := range t.steps {
		replies = append(replies, anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text(t.says[i]), anthropictest.Action(tb, fmt.Sprintf("toolu_%02d", i+1), v, a)}})
	}
	replies = append(replies, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("The form is submitted.")}})
	srv := anthropictest.NewServer(tb, replies...)
	err := runTask(ctx, func() (harness.Model, error) {
		return anthropic.New(anthropic.Config{APIKey: "bench", BaseURL: srv.URL, Display: t.size, Context: policy,
			MaxRetries: -1, Logger: quietLog})
	}, t, restart)
	var bodies [][]byte
	for _, r := range srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies, firstErr(err, tb.close())
}

func runOpenAI(ctx context.Context, t *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error) {
	tb := &fakeTB{}
	var replies []openaitest.Reply
	for i, a := range t.steps {
		replies = append(replies, openaitest.Reply{Output: []json.RawMessage{
			openaitest.ComputerCall(fmt.Sprintf("call_%02d", i+1), openaitest.Actions(tb, a)...)}})
	}
	replies = append(replies, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("The form is submitted.")}})
	srv := openaitest.NewServer(tb, replies...)
	err := runTask(ctx, func() (harness.Model, error) {
		return openai.New(openai.Config{APIKey: "bench", BaseURL: srv.URL, Display: t.size, Context: policy,
			MaxRetries: -1, Logger: quietLog})
	}, t, restart)
	var bodies [][]byte
	for _, r := range srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies, firstErr(err, tb.close())
}

func runGemini(ctx context.Context, t *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error) {
	tb := &fakeTB{}
	set := gemini.FunctionSetFor(gemini.DefaultModel)
	var replies []geminitest.Reply
	for i, a := range t.steps {
		c, err := geminitest.CallOf(set, fmt.Sprintf("call_%02d", i+1), toGrid(a, t.size))
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		replies = append(replies, geminitest.Turn{Text: t.says[i], Calls: []geminitest.Call{c}}.Reply())
	}
	replies = append(replies, geminitest.Text("The form is submitted."))
	srv := geminitest.NewServer(tb, replies...)
	err := runTask(ctx, func() (harness.Model, error) {
		return gemini.New(gemini.Config{APIKey: "bench", BaseURL: srv.URL, Display: t.size, Context: policy,
			MaxRetries: -1, Logger: quietLog})
	}, t, restart)
	var bodies [][]byte
	for _, r := range srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies, firstErr(err, tb.close())
}

func runChat(ctx context.Context, t *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error) {
	tb := &fakeTB{}
	resized := screen.SmartResize(t.size)
	var replies []chattest.Reply
	for i, a := range t.steps {
		replies = append(replies, chattest.UITARSActions(tb, t.says[i], scaleTo(a, t.size, resized)))
	}
	replies = append(replies, chattest.UITARS("The form is submitted.", "finished(content='The form is submitted.')"))
	srv := chattest.NewServer(tb, replies...)
	limit := 0 // the default, 5 images a request, as UI-TARS deployments take
	if policy.KeepAll() {
		limit = -1
	}
	err := runTask(ctx, func() (harness.Model, error) {
		return chat.New(chat.Config{BaseURL: srv.URL, Model: "ui-tars-1.5-7b", Display: t.size, Context: policy,
			MaxImages: limit, MaxRetries: -1, Logger: quietLog})
	}, t, restart)
	var bodies [][]byte
	for _, r := range srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies, firstErr(err, tb.close())
}

// toGrid returns a with its point on Gemini's 1000x1000 grid over an image
// of size s.
func toGrid(a actions.Action, s screen.Size) actions.Action {
	return scaleTo(a, s, screen.Size{W: 1000, H: 1000})
}

// scaleTo returns a with its point scaled from an image of size from to
// one of size to, in whole units.
func scaleTo(a actions.Action, from, to screen.Size) actions.Action {
	if a.HasAt {
		a.At = actions.Pt(float64(int(a.At.X*float64(to.W)/float64(from.W))), float64(int(a.At.Y*float64(to.H)/float64(from.H))))
	}
	return a
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
