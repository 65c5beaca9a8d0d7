package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/yamldoc"
)

// ApprovalConfig puts an approvals.Gate in front of a run's actions, as
// `spotter serve` puts one in front of a session's: the actions its Rules
// flag wait for a human's verdict, which the Asker obtains.
type ApprovalConfig struct {
	// Rules decide which actions need a human; the zero Rules are
	// approvals.Default(). Links and navigation to the task policy's hosts
	// need none. Supervise "all" sends every action with an effect;
	// "none" only the provider's safety checks.
	Rules approvals.Rules
	// Asker shows each flagged action to a human and returns their
	// verdict. Nil means nobody can be asked (no terminal): every flagged
	// action is refused at once with its rule's reason, which the model
	// gets as the call's error, and the run goes on.
	Asker Asker
}

// An Asker puts a flagged action before a human. Ask blocks until the
// human decides or ctx is done: the request expired, or the run ended.
// An error other than ctx's is a denial that says why nobody could decide.
type Asker interface {
	Ask(ctx context.Context, r approvals.Request) (approvals.Verdict, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(context.Context, approvals.Request) (approvals.Verdict, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, r approvals.Request) (approvals.Verdict, error) {
	return f(ctx, r)
}

// Who decides a run's requests when no human does.
const (
	byRun = "spotter run" // nobody could be asked, or asking failed
)

// noAskerReason is what a refused action's error says when nobody can be
// asked.
const noAskerReason = "nobody can approve it here (spotter run and spotter test ask on a terminal, and there is none; " +
	"--approvals none lets such actions through)"

// runApprover is a run's harness.Approver: an approvals.Gate on a queue of
// its own, whose requests an Asker decides in goroutines the approver
// owns. The caller must call close once the run is over.
type runApprover struct {
	gate   *approvals.Gate
	q      *approvals.Queue
	asker  Asker
	note   func(string)
	log    *slog.Logger
	cancel context.CancelFunc // ends every Ask in progress
	wg     sync.WaitGroup

	mu      sync.Mutex
	asking  map[string]context.CancelFunc // by request id
	refused map[requestKey]approvals.Request
}

type requestKey struct {
	call  string
	index int
}

// newRunApprover builds the approver of a run on display d (hit-tested
// when it can be), whose policy allows hosts. note writes a note into the
// run's trace; it must be safe for concurrent use.
func newRunApprover(cfg ApprovalConfig, hosts []string, d any, note func(string), log *slog.Logger) (*runApprover, error) {
	a := &runApprover{asker: cfg.Asker, note: note, log: log,
		asking: map[string]context.CancelFunc{}, refused: map[requestKey]approvals.Request{}}
	// Asks end when their request is decided, or when close cancels them;
	// no run context reaches them, so a run's end cannot strand a request.
	base, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.q = approvals.NewQueue(approvals.QueueConfig{OnEvent: func(ev approvals.Event) { a.onEvent(base, ev) }})
	gc := approvals.GateConfig{Queue: a.q, Rules: cfg.Rules, Session: "run", PolicyHosts: hosts, Logger: log}
	if ht, ok := d.(approvals.HitTester); ok {
		gc.HitTester = ht
	}
	if dr, ok := d.(approvals.DialogReporter); ok {
		gc.Dialogs = dr
	}
	g, err := approvals.NewGate(gc)
	if err != nil {
		cancel()
		return nil, err
	}
	a.gate = g
	return a, nil
}

// onEvent runs in the queue's hook: it hands each new request to a
// goroutine that asks, and stops asking about decided ones (expired).
func (a *runApprover) onEvent(base context.Context, ev approvals.Event) {
	r := ev.Request
	switch ev.Type {
	case approvals.EventRequest:
		a.note(fmt.Sprintf("approval needed (rule %s): %s", r.Rule, r.Reason))
		ctx, cancel := context.WithCancel(base)
		a.mu.Lock()
		a.asking[r.ID] = cancel
		a.mu.Unlock()
		a.wg.Go(func() {
			defer cancel()
			a.decide(ctx, r)
		})
	case approvals.EventDecision:
		v := r.Verdict
		a.mu.Lock()
		if cancel := a.asking[r.ID]; cancel != nil {
			cancel()
			delete(a.asking, r.ID)
		}
		if v.Kind == approvals.Deny && v.By == byRun {
			a.refused[requestKey{r.CallID, r.Index}] = r
		}
		a.mu.Unlock()
		what := map[approvals.VerdictKind]string{approvals.Approve: "approved", approvals.Deny: "denied", approvals.Edit: "edited"}[v.Kind]
		text := fmt.Sprintf("approval (rule %s) %s by %s", r.Rule, what, v.By)
		if v.Reason != "" {
			text += ": " + v.Reason
		}
		a.note(text)
	}
}

// decide obtains a verdict on r and gives it to the queue.
func (a *runApprover) decide(ctx context.Context, r approvals.Request) {
	v := approvals.Verdict{Kind: approvals.Deny, By: byRun, Reason: noAskerReason}
	if a.asker != nil {
		got, err := a.asker.Ask(ctx, r)
		switch {
		case ctx.Err() != nil:
			return // decided meanwhile (expired), or the run is over
		case err != nil:
			v.Reason = fmt.Sprintf("nobody could be asked: %v", err)
		default:
			v = got
		}
	}
	err := a.q.Decide(r.ID, v)
	if err != nil && !errors.Is(err, approvals.ErrDecided) && !errors.Is(err, approvals.ErrExpired) &&
		!errors.Is(err, approvals.ErrNotFound) {
		a.log.Error("decide an approval", "rule", r.Rule, "err", err)
	}
}

// Approve is the gate's Approve. An action refused because nobody could be
// asked comes back with its rule's reason, and says so.
func (a *runApprover) Approve(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
	d, err := a.gate.Approve(ctx, r)
	if err == nil {
		return d, nil
	}
	k := requestKey{r.CallID, r.Index}
	a.mu.Lock()
	got, refused := a.refused[k]
	delete(a.refused, k)
	a.mu.Unlock()
	if refused && errors.Is(err, harness.ErrDenied) {
		return d, fmt.Errorf("%w: %s (rule %s); %s", harness.ErrDenied, got.Reason, got.Rule, got.Verdict.Reason)
	}
	return d, err
}

// NewApprover returns the approver Run gives its loop, for a display d
// that an entry point opened itself (spotter mcp's sessions): an
// approvals.Gate on cfg's rules that hit-tests d when it can, whose
// questions go to cfg.Asker (or are refused with their rule's reason when
// it is nil), and where the policy allows hosts. note receives each
// question and decision, from other goroutines. The func it also returns
// withdraws a question still open; the caller must call it once the
// display's calls are over.
func NewApprover(cfg ApprovalConfig, hosts []string, d any, note func(string), log *slog.Logger) (harness.Approver, func(), error) {
	a, err := newRunApprover(cfg, hosts, d, note, log)
	if err != nil {
		return nil, nil, err
	}
	return a, a.close, nil
}

// close stops every Ask in progress and waits for them.
func (a *runApprover) close() {
	a.cancel()
	a.wg.Wait()
}

// LoadRules reads approval rules from a YAML file in the schema of package
// approvals, as approvals.Load does, and says where a file that does not
// validate goes wrong: the YAML parser's own errors carry their line
// numbers, and for the rest (an unknown rule name, a bad regular
// expression, a key that does not exist) the error starts with
// "FILE:LINE:", the line of the setting or list item at fault.
func LoadRules(path string) (approvals.Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return approvals.Rules{}, err // *fs.PathError names the file
	}
	r, err := approvals.Parse(b)
	if err == nil {
		return r, nil
	}
	var placed *yamldoc.Error
	if errors.As(err, &placed) {
		return approvals.Rules{}, fmt.Errorf("%s: %w", path, err) // it names its place
	}
	if line := faultLine(b); line > 0 {
		return approvals.Rules{}, fmt.Errorf("%s:%d: %w", path, line, err)
	}
	return approvals.Rules{}, fmt.Errorf("%s: %w", path, err)
}

// faultLine returns the line of the first top-level setting (or, within a
// list, the first item) whose addition to the ones before it makes rules
// b fail to validate, or 0 when the YAML parser reports the error itself,
// with its line, or no line can be told.
func faultLine(b []byte) int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) != 1 {
		return 0 // a syntax error, whose message has its line; or several documents
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var probe approvals.Rules
	var te *yaml.TypeError
	if err := dec.Decode(&probe); errors.As(err, &te) {
		return 0 // unknown fields, wrong types: the message names each line
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return m.Line
	}
	pairs := m.Content
	for i := 0; i+1 < len(pairs); i += 2 {
		if !invalid(pairs[:i+2]) {
			continue
		}
		k, v := pairs[i], pairs[i+1]
		if v.Kind == yaml.SequenceNode {
			for j, item := range v.Content {
				seq := *v
				seq.Content = v.Content[:j+1]
				if invalid(append(slices.Clone(pairs[:i]), k, &seq)) {
					return item.Line
				}
			}
		}
		return k.Line
	}
	return 0
}

// invalid reports whether the rules made of these key and value nodes do
// not validate.
func invalid(pairs []*yaml.Node) bool {
	b, err := yaml.Marshal(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: pairs})
	if err != nil {
		return false
	}
	_, err = approvals.Parse(b)
	return err != nil
}
