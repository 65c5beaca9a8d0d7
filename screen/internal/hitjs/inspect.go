package hitjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Caller sends one Chrome DevTools Protocol command on the session of
// the frame under inspection and decodes its result into result (nil:
// the result is not wanted). Each backend supplies its own, with its
// bounds and its translation of errors.
type Caller func(ctx context.Context, method string, params map[string]any, result any) error

// Hit is what a hit-test finds in one frame.
type Hit struct {
	screen.Target
	// Cross is set when the element is an iframe whose document the
	// script could not enter; X and Y are the point inside it.
	Cross *struct{ X, Y float64 } `json:"cross,omitempty"`
	// Probe says that nothing in the element's markup says it acts
	// when clicked: the browser is asked whether a script listens.
	Probe bool `json:"probe,omitempty"`
}

// listening are the events whose listeners make an element act when
// clicked.
var listening = map[string]bool{"click": true, "dblclick": true, "auxclick": true, "mousedown": true,
	"mouseup": true, "pointerdown": true, "pointerup": true, "touchstart": true, "touchend": true}

// objectGroup holds the remote objects a probe makes, released together.
const objectGroup = "spotter-hittest"

// Enter creates (or finds again) the hit-test world in frame and returns
// its execution context.
func Enter(ctx context.Context, call Caller, frame string) (int64, error) {
	var w struct {
		ID int64 `json:"executionContextId"`
	}
	err := call(ctx, "Page.createIsolatedWorld", map[string]any{"frameId": frame, "worldName": World}, &w)
	return w.ID, err
}

// Describe runs the hit-test in mode ("point" at p, in CSS px of the
// frame's viewport, or "focus") in the world of one frame, and describes
// the element found (inFrame: the frame is not the page's top one). When
// the element's markup does not say that it acts when clicked, Describe
// asks the browser which of the element and its ancestors has a listener
// for a click, a press or a touch, and describes the nearest such one as
// the element that acts. Those listeners belong to the page's world and
// are read from outside it: the page runs no code for this.
func Describe(ctx context.Context, call Caller, world int64, mode string, p actions.Point, inFrame bool) (Hit, error) {
	expr := Expr(mode, p.X, p.Y)
	h, err := describe(ctx, call, world, expr+".describe("+strconv.FormatBool(inFrame)+")")
	if err != nil || !h.Probe {
		return h, err
	}
	at, err := listener(ctx, call, world, expr)
	if err != nil {
		return Hit{}, err
	}
	h, err = describe(ctx, call, world, expr+".describe("+strconv.FormatBool(inFrame)+","+strconv.Itoa(at)+")")
	h.Probe = false
	return h, err
}

func describe(ctx context.Context, call Caller, world int64, expr string) (Hit, error) {
	var res evalResult
	if err := call(ctx, "Runtime.evaluate", map[string]any{
		"expression":    expr,
		"contextId":     world,
		"returnByValue": true,
		"silent":        true,
		"timeout":       Timeout.Milliseconds(),
	}, &res); err != nil {
		return Hit{}, err
	}
	if err := res.err(); err != nil {
		return Hit{}, err
	}
	var h Hit
	if len(res.Result.Value) == 0 || string(res.Result.Value) == "null" {
		return h, nil
	}
	if err := json.Unmarshal(res.Result.Value, &h); err != nil {
		return Hit{}, fmt.Errorf("hit-test script: %v", err)
	}
	return h, nil
}

// listener returns the index in the hit-test's chain of the nearest
// element a script listens on for clicks, or -1.
func listener(ctx context.Context, call Caller, world int64, expr string) (int, error) {
	defer call(context.WithoutCancel(ctx), "Runtime.releaseObjectGroup", map[string]any{"objectGroup": objectGroup}, nil) //nolint:errcheck // a page that went away took its objects along
	var res evalResult
	if err := call(ctx, "Runtime.evaluate", map[string]any{
		"expression":  expr + ".chain()",
		"contextId":   world,
		"objectGroup": objectGroup,
		"silent":      true,
		"timeout":     Timeout.Milliseconds(),
	}, &res); err != nil {
		return -1, err
	}
	if err := res.err(); err != nil {
		return -1, err
	}
	if res.Result.ObjectID == "" {
		return -1, errors.New("hit-test script: no chain of elements")
	}
	var props struct {
		Result []struct {
			Name  string `json:"name"`
			Value *struct {
				ObjectID string `json:"objectId"`
			} `json:"value"`
		} `json:"result"`
	}
	if err := call(ctx, "Runtime.getProperties", map[string]any{"objectId": res.Result.ObjectID, "ownProperties": true}, &props); err != nil {
		return -1, err
	}
	var elems []string
	for i := 0; ; i++ {
		id := ""
		for _, p := range props.Result {
			if p.Name == strconv.Itoa(i) && p.Value != nil {
				id = p.Value.ObjectID
			}
		}
		if id == "" {
			break
		}
		elems = append(elems, id)
	}
	// Each element's listeners, asked for all at once: three round trips
	// in all, not three an element.
	found := make([]bool, len(elems))
	errs := make([]error, len(elems))
	var wg sync.WaitGroup
	for i, id := range elems {
		wg.Go(func() { found[i], errs[i] = listens(ctx, call, id) })
	}
	wg.Wait()
	for i := range elems {
		if errs[i] != nil {
			return -1, errs[i]
		}
		if found[i] {
			return i, nil
		}
	}
	return -1, nil
}

// listens reports whether the element of the hit-test world's object id
// has a listener for clicks, presses or touches.
func listens(ctx context.Context, call Caller, id string) (bool, error) {
	// The element as the page's own world holds it: listeners are
	// reported to the world that added them.
	var node struct {
		Node struct {
			BackendNodeID int64 `json:"backendNodeId"`
		} `json:"node"`
	}
	if err := call(ctx, "DOM.describeNode", map[string]any{"objectId": id}, &node); err != nil {
		return false, err
	}
	var page struct {
		Object struct {
			ObjectID string `json:"objectId"`
		} `json:"object"`
	}
	if err := call(ctx, "DOM.resolveNode", map[string]any{"backendNodeId": node.Node.BackendNodeID, "objectGroup": objectGroup}, &page); err != nil {
		return false, err
	}
	var ls struct {
		Listeners []struct {
			Type string `json:"type"`
		} `json:"listeners"`
	}
	if err := call(ctx, "DOMDebugger.getEventListeners", map[string]any{"objectId": page.Object.ObjectID}, &ls); err != nil {
		return false, err
	}
	for _, l := range ls.Listeners {
		if listening[l.Type] {
			return true, nil
		}
	}
	return false, nil
}

// FrameOf returns the id of the frame that the iframe element, which the
// hit-test in mode at p lands on in world, shows.
func FrameOf(ctx context.Context, call Caller, world int64, mode string, p actions.Point) (string, error) {
	var res evalResult
	if err := call(ctx, "Runtime.evaluate", map[string]any{
		"expression": Expr(mode, p.X, p.Y) + ".element",
		"contextId":  world,
		"silent":     true,
		"timeout":    Timeout.Milliseconds(),
	}, &res); err != nil {
		return "", err
	}
	if res.err() != nil || res.Result.ObjectID == "" {
		return "", errors.New("no iframe element")
	}
	defer call(context.WithoutCancel(ctx), "Runtime.releaseObject", map[string]any{"objectId": res.Result.ObjectID}, nil) //nolint:errcheck // nothing to do if the page went away
	var n struct {
		Node struct {
			FrameID string `json:"frameId"`
		} `json:"node"`
	}
	if err := call(ctx, "DOM.describeNode", map[string]any{"objectId": res.Result.ObjectID}, &n); err != nil {
		return "", err
	}
	if n.Node.FrameID == "" {
		return "", errors.New("no iframe node")
	}
	return n.Node.FrameID, nil
}

// evalResult is the part of Runtime.evaluate's result that a hit-test
// reads.
type evalResult struct {
	Result struct {
		Value    json.RawMessage `json:"value"`
		ObjectID string          `json:"objectId"`
	} `json:"result"`
	Exception *struct {
		Text      string `json:"text"`
		Exception *struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

func (r evalResult) err() error {
	if r.Exception == nil {
		return nil
	}
	msg := r.Exception.Text
	if e := r.Exception.Exception; e != nil && e.Description != "" {
		msg = e.Description
	}
	if r := []rune(msg); len(r) > 200 { // the page chose it
		msg = string(r[:200]) + "…"
	}
	return fmt.Errorf("hit-test script: %s", msg)
}
