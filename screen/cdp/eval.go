package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/screen"
)

// ErrScript marks an expression given to Eval that threw, or whose value
// has no JSON form (NaN, Infinity, a BigInt).
var ErrScript = errors.New("script failed")

// evalWorld names the isolated world Eval runs in. It is not the
// hit-test's world, so that what an evaluated script leaves behind cannot
// change what a hit-test sees.
const evalWorld = "spotter-eval"

// Eval evaluates the JavaScript expression expr in the main frame of the
// active tab and returns its value as JSON (null for undefined). A value
// that is a promise is awaited. Eval is for reading the page, as QA checks
// do (is this text visible, does this element exist); it is not an action,
// and it bypasses the policy and approvals, so it must never run what a
// model wrote.
//
// The expression runs in an isolated world of Spotter's own: it sees the
// page's DOM as the page's scripts left it, but not their JavaScript
// globals, and none of their overrides of built-ins (a page that redefines
// document.querySelector or String.prototype.includes cannot change the
// answer). Same-origin iframes are reached through contentDocument, in the
// same kind of world. There is no way to read the page's own globals: no
// check needs them, and a page could fake them.
//
// Eval takes at most the display's CommandTimeout (less if ctx says so),
// whatever expr does: a page that does not answer in time, a promise that
// does not settle, or an expression that runs too long (it is then
// stopped) gives an error wrapping ErrUnresponsive. While a JavaScript
// dialog is open the page runs no script, and Eval fails at once with an
// error wrapping ErrUnresponsive that names the dialog. An exception
// thrown by expr gives an error wrapping ErrScript with its message; a
// dead browser or tab, one wrapping screen.ErrGone. In FrameControl mode
// the page draws no frames between captures, so a promise that waits for
// an animation frame does not settle.
//
// Eval waits for a Perform or Capture in progress to end.
func (d *Display) Eval(ctx context.Context, expr string) (json.RawMessage, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("eval: empty expression")
	}
	// mu keeps the active tab from changing under the evaluation.
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	top, state, _ := d.activeTab()
	if dlg := state.openDialog(); dlg != "" {
		return nil, fmt.Errorf("eval: the page is blocked by %s: %w", dlg, errBlocked)
	}
	limit := d.cfg.CommandTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, limit,
		fmt.Errorf("the page did not answer within %v: %w", limit, ErrUnresponsive))
	defer cancel()

	tree, err := hitCall(ctx, d, top, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		return nil, errors.New("eval: the page has no main frame")
	}
	w, err := hitCall(ctx, d, top, page.CreateIsolatedWorld,
		page.CreateIsolatedWorldParams{FrameID: tree.FrameTree.Frame.ID, WorldName: evalWorld})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	// The page stops a script that runs too long, a little before the
	// command would time out, so that the page is left usable.
	run := limit * 8 / 10
	if dl, ok := ctx.Deadline(); ok {
		run = min(run, time.Until(dl)*8/10)
	}
	start := time.Now()
	res, err := hitCall(ctx, d, top, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ContextID:     w.ExecutionContextID,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
		Silent:        new(true),
		Timeout:       runtime.TimeDelta(max(run, time.Millisecond) / time.Millisecond),
	})
	// A stopped script ends with an internal error (or, in some versions,
	// an exception) once its time is up.
	stopped := time.Since(start) >= run && ctx.Err() == nil
	if err != nil {
		if stopped && !errors.Is(err, screen.ErrGone) && !errors.Is(err, ErrUnresponsive) {
			return nil, fmt.Errorf("eval: the expression ran longer than %v and was stopped: %w", run.Round(time.Millisecond), ErrUnresponsive)
		}
		return nil, fmt.Errorf("eval: %w", err)
	}
	if ex := res.ExceptionDetails; ex != nil {
		msg := ex.Text
		if e := ex.Exception; e != nil && e.Description != "" {
			msg, _, _ = strings.Cut(e.Description, "\n") // the message, without the stack
		}
		if stopped {
			return nil, fmt.Errorf("eval: the expression ran longer than %v and was stopped (%s): %w",
				run.Round(time.Millisecond), clipErr(msg), ErrUnresponsive)
		}
		return nil, fmt.Errorf("eval: %w: %s", ErrScript, clipErr(msg))
	}
	r := res.Result
	switch {
	case r == nil:
		return json.RawMessage("null"), nil
	case r.UnserializableValue != "":
		return nil, fmt.Errorf("eval: %w: the value %s has no JSON form", ErrScript, r.UnserializableValue)
	case len(r.Value) == 0:
		return json.RawMessage("null"), nil // undefined, or a value the page could not copy
	}
	return json.RawMessage(r.Value), nil
}
