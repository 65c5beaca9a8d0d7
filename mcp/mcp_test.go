package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// fakeDisplay is screentest.Fake with a Close.
type fakeDisplay struct {
	*screentest.Fake
	mu       sync.Mutex
	closed   bool
	gone     chan struct{} // closed by Close
	closeErr error         // what Close returns
}

func (f *fakeDisplay) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		close(f.gone)
	}
	f.closed = true
	return f.closeErr
}

// fixture is a server over fake displays.
type fixture struct {
	srv      *Server
	mu       sync.Mutex
	displays []*fakeDisplay
}

func newFixture(t *testing.T, approver harness.Approver) *fixture {
	t.Helper()
	return newFixtureWith(t, approver, nil)
}

// newFixtureWith is newFixture with the Config changed by edit.
func newFixtureWith(t *testing.T, approver harness.Approver, edit func(*Config)) *fixture {
	t.Helper()
	f := &fixture{}
	policy := actions.Standard()
	policy.Hosts = []string{"example.test"}
	cfg := Config{
		NewDisplay: func(context.Context) (Display, error) {
			d := &fakeDisplay{Fake: &screentest.Fake{Viewport: screen.Size{W: 1280, H: 800}}, gone: make(chan struct{})}
			f.mu.Lock()
			f.displays = append(f.displays, d)
			f.mu.Unlock()
			return d, nil
		},
		Policy:   policy,
		Capture:  screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}},
		Approver: approver,
		Logger:   slog.New(slog.DiscardHandler),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	t.Cleanup(func() { srv.Close(context.Background()) })
	return f
}

// connect returns a client session over the named transport.
func (f *fixture) connect(t *testing.T, transport string) *sdk.ClientSession {
	t.Helper()
	return f.connectWith(t, transport, nil)
}

// connectWith is connect with a client of options opts.
func (f *fixture) connectWith(t *testing.T, transport string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx := t.Context()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	var ct sdk.Transport
	switch transport {
	case "memory":
		st, cst := sdk.NewInMemoryTransports()
		ss, err := f.srv.MCP().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		ct = cst
	case "http":
		hs := httptest.NewServer(f.srv.Handler()) // listens on 127.0.0.1
		t.Cleanup(hs.Close)
		ct = &sdk.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("Connect(%s) error = %v", transport, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and splits its result into the note, the images and
// the error text.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (note, [][]byte, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v) error = %v", name, args, err)
	}
	var n note
	var images [][]byte
	var errText string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			if c.MIMEType != "image/png" {
				t.Errorf("CallTool(%s) image type = %s, want image/png", name, c.MIMEType)
			}
			images = append(images, c.Data)
		case *sdk.TextContent:
			if rest, ok := strings.CutPrefix(c.Text, "error: "); ok {
				errText = rest
			} else if err := json.Unmarshal([]byte(c.Text), &n); err != nil {
				t.Errorf("CallTool(%s) text %q is not a note: %v", name, c.Text, err)
			}
		}
	}
	if res.IsError != (errText != "") {
		t.Errorf("CallTool(%s) isError = %v, error text %q: want both or neither", name, res.IsError, errText)
	}
	return n, images, errText
}

func TestToolsOverTransports(t *testing.T) {
	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			f := newFixture(t, nil)
			cs := f.connect(t, transport)

			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{ToolComputer, ToolNavigate, ToolOpenSession, ToolCloseSession, ToolListSessions} {
				if !slices.Contains(names, want) {
					t.Errorf("ListTools() = %v, want %s among them", names, want)
				}
			}

			first, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
			if errText != "" || len(images) != 1 || first.FrameID == "" || first.Image != (screen.Size{W: 1024, H: 640}) {
				t.Fatalf("screenshot = %+v, %d images, error %q; want one 1024x640 image with a frame id", first, len(images), errText)
			}
			if !strings.HasPrefix(string(images[0]), "\x89PNG") {
				t.Errorf("screenshot image is not a PNG")
			}

			// A click at (512, 320) of the 1024x640 image lands at the centre
			// of that pixel in CSS px: (640.625, 400.625).
			second, images, errText := call(t, cs, ToolComputer, map[string]any{
				"kind": "click", "at": map[string]any{"x": 512, "y": 320}, "frame_id": first.FrameID})
			if errText != "" || second.Ran != 1 || len(images) != 1 {
				t.Fatalf("click = %+v, %d images, error %q; want it run with a screenshot", second, len(images), errText)
			}
			if second.FrameID == "" || second.FrameID == first.FrameID {
				t.Errorf("click answered with frame %q, want a fresh one after %q", second.FrameID, first.FrameID)
			}
			f.mu.Lock()
			d := f.displays[0]
			f.mu.Unlock()
			got := d.Performed()
			if len(got) != 1 || got[0].Kind != actions.Click || got[0].At != actions.Pt(640.625, 400.625) {
				t.Errorf("performed %+v, want one click at (640.625,400.625) CSS px", got)
			}

			// The policy refuses navigation elsewhere, and says so.
			_, images, errText = call(t, cs, ToolNavigate, map[string]any{"url": "https://evil.test/"})
			if !strings.Contains(errText, "not allowed") || len(images) != 1 {
				t.Errorf("navigate to a host the policy does not allow: error %q with %d images, want a refusal with a screenshot", errText, len(images))
			}
			// A bad action is an error result, not a protocol error.
			_, _, errText = call(t, cs, ToolComputer, map[string]any{"kind": "teleport"})
			if errText == "" {
				t.Errorf("kind teleport: no error, want one")
			}
			_, _, errText = call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 5000, "y": 10}})
			if !strings.Contains(errText, "outside") {
				t.Errorf("click outside the image: error %q, want it to say outside", errText)
			}
		})
	}
}

func TestBatchAndSessions(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	n, _, errText := call(t, cs, ToolComputer, map[string]any{"actions": []any{
		map[string]any{"kind": "type", "text": "hello"},
		map[string]any{"kind": "keypress", "keys": []string{"ctrl", "a"}},
		map[string]any{"kind": "wait", "duration_ms": 1},
	}})
	if errText != "" || n.Ran != 3 {
		t.Errorf("batch: ran %d, error %q; want 3 and none", n.Ran, errText)
	}

	opened, images, errText := call(t, cs, ToolOpenSession, nil)
	if errText != "" || opened.Session == "" || len(images) != 1 {
		t.Fatalf("open_session = %+v, error %q", opened, errText)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: ToolListSessions})
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Sessions []sessionInfo }
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &list); err != nil || len(list.Sessions) != 2 {
		t.Errorf("list_sessions = %v (err %v), want the default session and the opened one", res.Content, err)
	}
	if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot", "session": opened.Session}); errText != "" {
		t.Errorf("screenshot in session %s: %s", opened.Session, errText)
	}
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: ToolCloseSession, Arguments: map[string]any{"session": opened.Session}}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	closed := f.displays[1].closed
	f.mu.Unlock()
	if !closed {
		t.Errorf("close_session left the display open")
	}
	if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot", "session": opened.Session}); !strings.Contains(errText, ErrNoSession.Error()) {
		t.Errorf("screenshot in a closed session: error %q, want %q", errText, ErrNoSession)
	}
}

// A session that does not close cleanly is closed all the same, and the
// client is told so without the reason, which names the server's paths.
func TestCloseSessionError(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	opened, _, errText := call(t, cs, ToolOpenSession, nil)
	if errText != "" {
		t.Fatal(errText)
	}
	f.mu.Lock()
	f.displays[0].closeErr = errors.New("close trace /var/lib/spotter/s1: input/output error")
	f.mu.Unlock()
	_, _, errText = call(t, cs, ToolCloseSession, map[string]any{"session": opened.Session})
	if !strings.Contains(errText, "not all of it closed cleanly") || strings.Contains(errText, "/var/lib") {
		t.Errorf("close_session of a display that fails to close: error %q, want it said without the path", errText)
	}
	if _, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot", "session": opened.Session}); !strings.Contains(errText, ErrNoSession.Error()) {
		t.Errorf("screenshot in the session after: error %q, want %q", errText, ErrNoSession)
	}
}

func TestApprovals(t *testing.T) {
	var mu sync.Mutex
	var asked []harness.ApprovalRequest
	approver := harness.ApproverFunc(func(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		switch r.Action.Kind {
		case actions.Click:
			return harness.Decision{}, fmt.Errorf("%w: a human refused the click on the buy button", harness.ErrDenied)
		case actions.Type:
			edit := r.Action
			edit.Text = "edited"
			return harness.Decision{Edit: &edit, Notes: []string{"a human changed the text"}}, nil
		}
		return harness.Decision{}, nil
	})
	f := newFixture(t, approver)
	cs := f.connect(t, "memory")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})

	_, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 10, "y": 10}})
	if !strings.Contains(errText, "refused the click on the buy button") || len(images) != 1 {
		t.Errorf("refused click: error %q with %d images, want the reason and a screenshot", errText, len(images))
	}
	n, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "type", "text": "original"})
	if errText != "" || !slices.Contains(n.Notes, "a human changed the text") {
		t.Errorf("edited type: %+v error %q, want the approver's note", n, errText)
	}
	f.mu.Lock()
	got := f.displays[0].Performed()
	f.mu.Unlock()
	if len(got) != 1 || got[0].Kind != actions.Type || got[0].Text != "edited" {
		t.Errorf("performed %+v, want only the edited type", got)
	}
	mu.Lock()
	defer mu.Unlock()
	// Like the loop, the approver sees every action, the screenshot too.
	if len(asked) != 3 || asked[0].Action.Kind != actions.Screenshot || asked[1].Mapped == nil || asked[2].Mapped != nil {
		t.Errorf("approver asked %+v, want the screenshot, the click (with its mapped point) and the type", asked)
	}
}

func TestWaitingApprovalHonoursCancel(t *testing.T) {
	block := harness.ApproverFunc(func(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		<-ctx.Done()
		return harness.Decision{}, context.Cause(ctx)
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	ex, err := harness.NewExecutor(harness.ExecutorConfig{Display: &screentest.Fake{}, Policy: actions.Standard(), Approver: block})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ex.Screenshot(ctx, harness.ActorClient); err != nil {
		t.Fatal(err)
	}
	cancel(errors.New("the client went away"))
	r := ex.Do(ctx, harness.Call{ID: "c1", Actions: []actions.Action{{Kind: actions.Type, Text: "x"}}}, harness.Options{Actor: harness.ActorClient})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "the client went away") {
		t.Errorf("Call() with a canceled context: %v, want the cause", r.Err)
	}
}

func TestNewNeedsDisplay(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(Config{}) = nil error, want one")
	}
}

// Argument names the schema does not have are refused with the right shape,
// and nothing runs: {"x", "y"} instead of {"at": {"x", "y"}} must not click
// at the pointer's old position.
func TestUnknownArgumentsAreRefused(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	for _, args := range []map[string]any{
		{"kind": "click", "x": 85, "y": 254},
		{"kind": "type", "txt": "hello"},
		{"actions": []any{map[string]any{"kind": "click", "at": map[string]any{"x": 1, "y": 2}, "session": "s1"}}},
	} {
		n, images, errText := call(t, cs, ToolComputer, args)
		if !strings.Contains(errText, "unknown argument") || !strings.Contains(errText, `"at": {"x": 85, "y": 254}`) {
			t.Errorf("computer %v: error %q, want the unknown argument named and the right shape shown", args, errText)
		}
		if n.Ran != 0 || len(images) != 0 {
			t.Errorf("computer %v: ran %d with %d images, want a refusal before anything runs", args, n.Ran, len(images))
		}
	}
	f.mu.Lock()
	performed := f.displays[0].Performed()
	f.mu.Unlock()
	if len(performed) != 0 {
		t.Errorf("refused calls performed %+v", performed)
	}
	// The right shape runs.
	if n, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 85, "y": 254}}); errText != "" || n.Ran != 1 {
		t.Errorf("click with at: ran %d, error %q", n.Ran, errText)
	}
}

// A start URL the client names is the client's navigate action: the policy
// refuses a host it does not name (and the session is not left open), and
// allows one it does.
func TestOpenSessionStartURLGoesThroughThePolicy(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	_, _, errText := call(t, cs, ToolOpenSession, map[string]any{"start_url": "https://evil.example/"})
	if !strings.Contains(errText, "not allowed") {
		t.Errorf("open_session off the allowlist: error %q, want the policy's refusal", errText)
	}
	if got := f.srv.list(""); len(got) != 0 {
		t.Errorf("sessions after a refused open = %+v, want none", got)
	}
	opened, _, errText := call(t, cs, ToolOpenSession, map[string]any{"start_url": "https://example.test/a"})
	if errText != "" || opened.Session == "" {
		t.Fatalf("open_session on the allowlist = %+v, %q", opened, errText)
	}
	f.mu.Lock()
	last := f.displays[len(f.displays)-1].Performed()
	f.mu.Unlock()
	if len(last) != 1 || last[0].Kind != actions.Navigate || last[0].URL != "https://example.test/a" {
		t.Errorf("the new session performed %+v, want the navigation to its start URL", last)
	}
}

// Ask puts an approver's question to the user of the client whose call
// raised it, during the call, over either transport: the answer (approve
// or not, with a reason) decides; a declined form refuses; a client
// without elicitation, or a call that is not in progress, cannot be asked.
func TestAskElicits(t *testing.T) {
	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			var f *fixture
			var askErr error
			approver := harness.ApproverFunc(func(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
				if r.Action.Kind != actions.Click {
					return harness.Decision{}, nil
				}
				ok, reason, err := f.srv.Ask(ctx, r.CallID, "click the buy button?")
				askErr = err
				switch {
				case err != nil:
					return harness.Decision{}, fmt.Errorf("%w: %v", harness.ErrDenied, err)
				case !ok:
					return harness.Decision{}, fmt.Errorf("%w: the user said no: %s", harness.ErrDenied, reason)
				}
				return harness.Decision{}, nil
			})
			f = newFixture(t, approver)
			var questions []string
			answer := &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false, "reason": "too dear"}}
			cs := f.connectWith(t, transport, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				questions = append(questions, r.Params.Message)
				return answer, nil
			}})
			click := func(cs *sdk.ClientSession) string {
				call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
				_, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 10, "y": 10}})
				return errText
			}
			if got := click(cs); !strings.Contains(got, "the user said no: too dear") {
				t.Errorf("refused click: error %q, want the user's reason", got)
			}
			answer = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
			if got := click(cs); got != "" {
				t.Errorf("approved click: error %q", got)
			}
			answer = &sdk.ElicitResult{Action: "decline"}
			if got := click(cs); !strings.Contains(got, "the user chose decline") {
				t.Errorf("declined click: error %q, want it refused", got)
			}
			if len(questions) != 3 || questions[0] != "click the buy button?" {
				t.Errorf("questions %q, want the approver's, three times", questions)
			}
			if got := click(f.connect(t, transport)); !strings.Contains(got, "cannot ask its user: it does not support elicitation") ||
				!errors.Is(askErr, ErrCannotAsk) {
				t.Errorf("click from a client without elicitation: error %q (%v), want ErrCannotAsk", got, askErr)
			}
			if _, _, err := f.srv.Ask(t.Context(), "c-none", "?"); !errors.Is(err, ErrCannotAsk) {
				t.Errorf("Ask(a call not in progress) = %v, want ErrCannotAsk", err)
			}
			// A retry's state must be one this client was given.
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: ToolComputer, RequestState: "forged",
				Arguments: map[string]any{"kind": "click", "at": map[string]any{"x": 10, "y": 10}}})
			if err != nil || !res.IsError {
				t.Errorf("retry with a forged state = %+v, %v; want an error result", res, err)
			}
		})
	}
}

// askingFixture is a fixture whose approver asks the client about every
// click (Ask), waiting at most patience for the answer (0: as long as the
// call lasts), refuses it unless the answer is yes, and sends each Ask's
// error on the channel it returns.
func askingFixture(t *testing.T, patience time.Duration) (*fixture, chan error) {
	var f *fixture
	asked := make(chan error, 1)
	approver := harness.ApproverFunc(func(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		if r.Action.Kind != actions.Click {
			return harness.Decision{}, nil
		}
		if patience > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, patience, errors.New("no decision in time"))
			defer cancel()
		}
		ok, _, err := f.srv.Ask(ctx, r.CallID, "click?")
		asked <- err
		if err != nil || !ok {
			return harness.Decision{}, fmt.Errorf("%w: %v", harness.ErrDenied, err)
		}
		return harness.Decision{}, nil
	})
	f = newFixture(t, approver)
	return f, asked
}

// A question still open when its session closes is withdrawn: the parked
// call ends at once (not at the rules' timeout), the action never runs,
// and the client's late answer finds nothing to resume.
func TestQuestionWithdrawnWhenSessionCloses(t *testing.T) {
	f, asked := askingFixture(t, 0)
	closed := make(chan struct{})
	var other *sdk.ClientSession
	cs := f.connectWith(t, "memory", &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		// While the user thinks, the session is closed from elsewhere.
		call(t, other, ToolCloseSession, map[string]any{"session": "s1"})
		close(closed)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	other = f.connect(t, "memory")
	opened, _, _ := call(t, cs, ToolOpenSession, map[string]any{})
	if opened.Session != "s1" {
		t.Fatalf("opened session %q, want s1", opened.Session)
	}
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot", "session": "s1"})
	_, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "session": "s1", "at": map[string]any{"x": 10, "y": 10}})
	<-closed
	if errText == "" {
		t.Errorf("the click's retry after its session closed succeeded, want an error")
	}
	select {
	case err := <-asked:
		// The call's context is the approver's here: either says the
		// question ended with the call.
		if !errors.Is(err, ErrCannotAsk) && (err == nil || !strings.Contains(err.Error(), "session s1 closed")) {
			t.Errorf("Ask after its session closed = %v, want ErrCannotAsk or the session's closing", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the question was not withdrawn when its session closed")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.displays[0].Performed(); len(got) != 0 {
		t.Errorf("performed %+v after the session closed, want nothing", got)
	}
}

// A question that expires before its client answers refuses the action:
// the call ends denied, nothing is performed, and the client's late
// retry is told that no question waits for it.
func TestQuestionExpires(t *testing.T) {
	f, asked := askingFixture(t, 200*time.Millisecond)
	cs := f.connectWith(t, "memory", &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		// The user answers only once the question has expired.
		select {
		case err := <-asked:
			asked <- err
		case <-ctx.Done():
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	_, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 10, "y": 10}})
	if !strings.Contains(errText, "no question of this client waits for that answer") {
		t.Errorf("late answer to an expired question: error %q, want it told that nothing waits", errText)
	}
	if err := <-asked; err == nil || !strings.Contains(err.Error(), "no decision in time") {
		t.Errorf("Ask of an expiring question = %v, want its context's cause", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.displays[0].Performed(); len(got) != 0 {
		t.Errorf("performed %+v after the question expired, want nothing", got)
	}
}
