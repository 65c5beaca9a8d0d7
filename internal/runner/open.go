package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
)

// Surroundings are what a task's loop runs against, opened by Open: its
// display and the approver of its flagged actions. Run and `spotter test`
// both open them here, so that a task gets the same sandbox, egress
// allowlist and approval rules whichever command runs it.
type Surroundings struct {
	// Display is the task's display, started anew if it dies.
	Display wiring.Display
	// Approver is the loop's harness.Config.Approver: nil without
	// Options.Approvals.
	Approver harness.Approver

	ap    *runApprover
	mu    sync.Mutex
	state *SandboxState // counted under mu; nil without a sandbox
}

// Open opens task t's display at startURL (the demo app's address for a
// demo task, as are the hosts of policy) and its approver, as o asks: in a
// sandbox of o.Sandboxes whose egress proxy allows policy's hosts and the
// start URL's, and nothing else; as a browser context of one of o.Shared's
// browsers, behind that proxy; or on the host. The start URL is the
// operator's choice, so it is not subject to the model's policy. note
// receives what the trace should show: each egress decision, a display
// that died and was started anew, each approval asked for and how it was
// decided; it is called from other goroutines than the loop's. The caller
// must call Close.
func Open(ctx context.Context, t Task, startURL string, policy actions.Policy, o Options, note func(string), log *slog.Logger) (*Surroundings, error) {
	s := &Surroundings{}
	req := DisplayRequest(t, startURL, policy, o, note, log)
	if noted := req.OnDecision; noted != nil { // in a sandbox: count its decisions too
		backend := o.Sandboxes.Backend()
		if !t.Display.Sandboxed(backend) {
			backend = isolate.Local // behind a proxy of its own on the host (Sandboxes.Behind)
		}
		s.state = &SandboxState{Backend: backend, Egress: req.Egress}
		req.OnDecision = func(d egress.Decision) {
			s.mu.Lock()
			if d.Allowed {
				s.state.Allowed++
			} else {
				s.state.Refused++
			}
			s.mu.Unlock()
			noted(d)
		}
	}
	disp, err := wiring.OpenDisplay(ctx, req)
	if err != nil {
		return nil, err
	}
	s.Display = disp
	if o.Approvals != nil {
		if s.ap, err = newRunApprover(*o.Approvals, policy.Hosts, disp, note, log); err != nil {
			return nil, errors.Join(fmt.Errorf("approval rules: %w", err), disp.Close(context.WithoutCancel(ctx)))
		}
		s.Approver = s.ap
	}
	return s, nil
}

// DisplayRequest is the wiring request of task t's display at startURL as
// Open makes it: in a sandbox of o.Sandboxes (when t's display runs in
// one) whose egress proxy allows policy's hosts and the start URL's, each
// decision a note (its OnDecision is set then only); as a browser
// context of o.Shared's browsers on the host; or on the host. `spotter
// mcp` opens its sessions' displays with it.
func DisplayRequest(t Task, startURL string, policy actions.Policy, o Options, note func(string), log *slog.Logger) wiring.DisplayRequest {
	req := wiring.DisplayRequest{
		Display: t.Display, Browser: o.Browser, StartURL: startURL, Getenv: o.Getenv,
		Sandboxes: o.Sandboxes, OnNote: note, Logger: log,
	}
	if o.Sandboxes == nil || o.Sandboxes.Backend() == isolate.Local {
		req.Shared = o.Shared // a containerd sandbox runs a browser of its own
	}
	if o.Sandboxes != nil && o.Sandboxes.Behind(t.Display) {
		req.Sandbox = isolate.Config{Name: t.Name, MemoryMiB: o.MemoryMiB, Logger: log}
		req.Egress = wiring.EgressFor(policy.Hosts, startURL)
		req.OnDecision = func(d egress.Decision) { note(decisionNote(d)) }
	}
	return req
}

// Close withdraws an approval still asked for (the run timed out), closes
// the display, and returns what its sandbox did: nil without a sandbox. No
// egress decision is counted after it returns.
func (s *Surroundings) Close(ctx context.Context) (*SandboxState, error) {
	if s.ap != nil {
		s.ap.close()
	}
	restarts, first := s.Display.Restarts(), s.Display.FirstShot()
	err := s.Display.Close(ctx)
	if s.state == nil {
		return nil, err
	}
	s.mu.Lock()
	st := *s.state
	s.mu.Unlock()
	st.Restarts, st.FirstShot = restarts, first
	return &st, err
}
