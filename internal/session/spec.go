package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
)

// Session kinds.
const (
	KindAgent    = "agent"    // the server runs the model
	KindExecutor = "executor" // the client runs its own loop and posts calls
	KindMCP      = "mcp"      // an MCP client's session: its approvals, in the panel
)

// Supervision modes (ApprovalSpec.Supervise).
const (
	SuperviseFlagged = "flagged" // the rules decide (the default)
	SuperviseAll     = "all"     // every action waits for a human
	SuperviseNone    = "none"    // nothing waits, except provider safety checks
)

// Spec is what a client asks for when it creates a session: the body of
// PUT /session (or POST /executor/sessions). It is stored with the session
// and holds no secrets: keys come from the server's environment.
type Spec struct {
	Title     string             `json:"title,omitempty"`
	Messages  []InMessage        `json:"messages,omitempty"`
	Tools     []harness.ToolSpec `json:"tools,omitempty"`
	Model     ModelSpec          `json:"model"`
	Display   DisplaySpec        `json:"display"`
	StartURL  string             `json:"start_url,omitempty"`
	Policy    *actions.Policy    `json:"policy,omitempty"`
	Approvals ApprovalSpec       `json:"approvals"`
	MaxSteps  int                `json:"max_steps,omitempty"`
	// Provider names the wire format of an executor session's calls:
	// anthropic, openai or gemini.
	Provider string `json:"provider,omitempty"`
}

// ModelSpec names the model a session's loop talks to.
type ModelSpec struct {
	Provider  string `json:"provider"`
	Name      string `json:"name,omitempty"`
	BaseURL   string `json:"base_url,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	// Turns are a script model's turns (provider "script"): OpenAI
	// computer actions in the pixels of the session's screenshots.
	Turns []script.Turn `json:"turns,omitempty"`
	// Context says which screenshots each request to the model carries
	// in full (keep, chunk, repeats; zero values are the defaults of
	// harness/ctxpolicy).
	Context ctxpolicy.Policy `json:"context,omitzero"`
}

// DisplaySpec is the session's display: its backend (chromium by
// default; vnc, desktop or playwright), its size and where it is (see
// wiring.DisplaySpec, whose fields it has).
type DisplaySpec struct {
	Backend     string   `json:"backend,omitempty"`      // chromium (default), vnc, desktop or playwright
	Width       int      `json:"width,omitempty"`        // default 1280
	Height      int      `json:"height,omitempty"`       // default 800
	DPR         float64  `json:"dpr,omitempty"`          // default 1
	Address     string   `json:"address,omitempty"`      // vnc: host:port or unix:/path
	PasswordEnv string   `json:"password_env,omitempty"` // vnc: the server's variable holding the password
	Command     []string `json:"command,omitempty"`      // desktop: what it runs; default an xterm
	WSEndpoint  string   `json:"ws_endpoint,omitempty"`  // playwright: a browser server's ws:// address
	// Image, for an executor session only, is the size of the screenshots
	// its client is sent, and so of the space the coordinates it posts are
	// in. By default it is what the provider's size rule (screen.RuleFor,
	// with model.name) lets through without resizing: a larger image would
	// be shrunk by the provider, and the model would answer in the smaller
	// image's pixels. An override keeps the display's aspect and is never
	// larger than the display.
	Image *screen.Size `json:"image,omitempty"`
}

// ApprovalSpec says what needs a human.
type ApprovalSpec struct {
	Supervise string `json:"supervise,omitempty"` // flagged (default), all or none
	// Confirm lists action kinds that always wait for a human, on top of
	// the rules.
	Confirm []actions.Kind `json:"confirm,omitempty"`
	// Rules are approval rules in the YAML schema of package approvals,
	// as JSON; empty means the default rules.
	Rules json.RawMessage `json:"rules,omitempty"`
}

// InMessage is one entry of the messages array of PUT /session and
// POST /session/:id.
type InMessage struct {
	Role       string          `json:"role"` // user, tool or tool_permission
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Granted    bool            `json:"granted,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Edit       *Edit           `json:"edit,omitempty"`
}

// Edit replaces an action a human approved: At in the pixels of the
// screenshot shown with the request, or Text.
type Edit struct {
	At   *actions.Point `json:"at,omitempty"`
	Text *string        `json:"text,omitempty"`
}

// text returns a message's content as plain text: a JSON string as is,
// an array of {"type":"text","text"} parts joined, anything else as JSON.
func (m InMessage) text() string {
	if len(m.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		out := ""
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				if out != "" {
					out += "\n"
				}
				out += p.Text
			}
		}
		return out
	}
	return string(m.Content)
}

// ErrBadRequest marks a request the client must change.
var ErrBadRequest = errors.New("bad request")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// defaults fills in a Spec's defaults and checks it.
func (s *Spec) defaults(kind string) error {
	ws := s.Display.Spec()
	ws.Defaults()
	s.Display.Backend, s.Display.Width, s.Display.Height, s.Display.DPR = ws.Backend, ws.Width, ws.Height, ws.DPR
	if err := ws.Check(); err != nil {
		return specError(err)
	}
	switch {
	case s.MaxSteps < 0 || s.MaxSteps > 1000:
		return bad("max_steps %d is outside 1..1000", s.MaxSteps)
	}
	if s.Display.Image != nil {
		if kind != KindExecutor {
			return bad("display.image is for executor sessions: an agent session's screenshots follow its model's size rule")
		}
		if err := checkImage(*s.Display.Image, s.Display.Size()); err != nil {
			return err
		}
	}
	if s.MaxSteps == 0 {
		s.MaxSteps = 50
	}
	if err := s.builtin(kind); err != nil { // a script or the demo; a demo: start URL
		return err
	}
	if s.StartURL == "" {
		s.StartURL = "about:blank"
	}
	if err := ws.CheckStartURL(s.StartURL); err != nil {
		return specError(err)
	}
	if s.StartURL != "about:blank" {
		u, err := url.Parse(s.StartURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("start_url %q: want an http(s) URL or about:blank", s.StartURL)
		}
	}
	switch s.Approvals.Supervise {
	case "":
		s.Approvals.Supervise = SuperviseFlagged
	case SuperviseFlagged, SuperviseAll, SuperviseNone:
	default:
		return bad("approvals.supervise %q: want flagged, all or none", s.Approvals.Supervise)
	}
	if s.Policy == nil {
		p := actions.Standard()
		if u, err := url.Parse(s.StartURL); err == nil && u.Host != "" {
			p.Hosts = []string{u.Host}
		}
		s.Policy = &p
	}
	if err := s.Policy.Validate(); err != nil {
		return bad("policy: %v", err)
	}
	names := map[string]bool{}
	for _, t := range s.Tools {
		if t.Name == "" || names[t.Name] {
			return bad("tools: every tool needs a unique name (%q)", t.Name)
		}
		names[t.Name] = true
		if len(t.InputSchema) > 0 && !json.Valid(t.InputSchema) {
			return bad("tools: %s: input_schema is not JSON", t.Name)
		}
	}
	switch kind {
	case KindAgent:
		if s.Model.Provider == "" {
			return bad("model.provider is required")
		}
		for _, m := range s.Messages {
			if m.Role != "user" {
				return bad("a new session takes only user messages, not %q", m.Role)
			}
		}
	case KindExecutor:
		if !slices.Contains(wiring.ExecutorProviders, s.Provider) {
			return bad("provider %q: want anthropic, openai or gemini", s.Provider)
		}
		if len(s.Tools) > 0 || len(s.Messages) > 0 {
			return bad("an executor session takes no tools or messages")
		}
		if s.Model.Provider != "" && s.Model.Provider != s.Provider {
			return bad("model.provider %q differs from provider %q: an executor session's model is the client's, named by model.name",
				s.Model.Provider, s.Provider)
		}
	}
	return nil
}

// Spec returns the display as package wiring takes it.
func (d DisplaySpec) Spec() wiring.DisplaySpec {
	return wiring.DisplaySpec{Backend: d.Backend, Width: d.Width, Height: d.Height, DPR: d.DPR, Address: d.Address,
		PasswordEnv: d.PasswordEnv, Command: d.Command, WSEndpoint: d.WSEndpoint}
}

// Size returns the display's size.
func (d DisplaySpec) Size() screen.Size { return screen.Size{W: d.Width, H: d.Height} }

// Browser reports whether the display is a browser (see
// wiring.DisplaySpec.Browser).
func (d DisplaySpec) Browser() bool { return d.Spec().Browser() }

// specError turns wiring's words about a spec into an ErrBadRequest.
func specError(err error) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, strings.ReplaceAll(err.Error(), wiring.ErrSpec.Error()+": ", ""))
}

// minImageSide is the shortest side a display.image may have: below it a
// pixel of the image covers too much of the page to click reliably.
const minImageSide = 100

// checkImage checks a display.image override for a display of size d.
func checkImage(im, d screen.Size) error {
	switch {
	case im.W <= 0 || im.H <= 0:
		return bad(`display.image %dx%d: want {"w", "h"}, both in pixels`, im.W, im.H)
	case im.W > d.W || im.H > d.H:
		return bad("display.image %dx%d is larger than the %dx%d display: screenshots are never scaled up", im.W, im.H, d.W, d.H)
	case im.W < minImageSide || im.H < minImageSide:
		return bad("display.image %dx%d: each side must be at least %d px", im.W, im.H, minImageSide)
	}
	// The image keeps the display's aspect (to a pixel of rounding), or
	// what the model sees is stretched.
	if want := float64(im.W) * float64(d.H) / float64(d.W); math.Abs(want-float64(im.H)) > 1 {
		return bad("display.image %dx%d does not keep the %dx%d display's aspect: for w %d, h is %.0f",
			im.W, im.H, d.W, d.H, im.W, want)
	}
	return nil
}

// image is the size of the screenshots the session's model is sent. For
// an executor session (Provider set) that is its display.image, or what
// the provider's size rule lets through: the client's model answers in
// the pixels of the image it saw, so the screenshots must be that size
// already.
func (s Spec) image() screen.Size {
	switch {
	case s.Display.Image != nil:
		return *s.Display.Image
	case s.Provider != "":
		return screen.RuleFor(s.Provider, s.Model.Name).Fit(s.Display.Size())
	case s.Model.Provider == ProviderScript:
		return s.Display.Size()
	case s.Model.Provider == ProviderDemo:
		return screen.RuleFor("anthropic", DemoModelName).Fit(s.Display.Size())
	}
	return screen.RuleFor(s.Model.Provider, s.Model.Name).Fit(s.Display.Size())
}

// Image is the size of the screenshots the session's model is sent.
func (s Spec) Image() screen.Size { return s.image() }

// hasTool reports whether name is one of the spec's application-side tools.
func (s Spec) hasTool(name string) bool {
	return slices.ContainsFunc(s.Tools, func(t harness.ToolSpec) bool { return t.Name == name })
}

// DisplayOf returns a session's display spec for d.
func DisplayOf(d wiring.DisplaySpec) DisplaySpec {
	return DisplaySpec{Backend: d.Backend, Width: d.Width, Height: d.Height, DPR: d.DPR, Address: d.Address,
		PasswordEnv: d.PasswordEnv, Command: d.Command, WSEndpoint: d.WSEndpoint}
}
