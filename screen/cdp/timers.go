package cdp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
)

// Short timers. A page often answers input late: a click handler waits
// 120 ms (setTimeout) or a few animation frames and only then changes what
// it shows. Nothing in the protocol tells that such a change is coming: no
// request is in flight and, until the timer fires, nothing is drawn, so a
// settle that waits only for the network and for frames would capture the
// page before the change.
//
// So each document of a display's tab runs timerScript first (in the
// page's own world, as it must see the page's calls): it wraps setTimeout
// and requestAnimationFrame and counts the callbacks that are pending and
// were scheduled in answer to input, which it reports through the binding
// timerBinding whenever the count changes. Settling waits for the count to
// fall to zero as it waits for requests in flight, bounded by the settle
// timeout and by maxTimerWait.
//
// A callback is counted only if it was scheduled within timerWindow of an
// input event (a pointer, key, wheel or form event; its time is moved to
// the first animation frame after it, as frames are held until a capture
// asks for one, however late that is), or within timerWindow
// of the start of a counted callback, up to a chain depth (timerDepth
// for setTimeout, rafDepth for animation frames); a setTimeout is counted
// only if its delay is at most maxTimerDelay. A callback that schedules
// itself again (a polling loop, an animation loop) is never counted there:
// what runs forever cannot be waited for, and a polling page should not
// make every step wait.
//
// Script animations. A loop that moves something a step at a time (a
// jQuery animation's setInterval of 13 ms, a chain of setTimeouts, a
// requestAnimationFrame loop) draws a little at each step and nothing in
// between, so a frame without damage, or a quiet window shorter than a
// step, can fall between two steps of a half-finished animation. So the
// same script also tells loops that change the page from loops that
// poll, and counts the page's changes (see animations.changes): it watches the DOM with a MutationObserver, canvas drawing and
// scroll events, and judges each callback run by whether the page changed
// during it. Its count of script animations (read by animationsJS, with
// the page's CSS and Web Animations, and never pushed: a page that changed
// nothing is not asked) holds
//   - a setInterval of at most maxLoopPeriod, from its creation until its
//     first run, and then for as long as one of its last loopIdleRuns runs
//     changed the page (until cleared);
//   - a setTimeout of at most maxLoopPeriod, or an animation frame, that a
//     callback run scheduled, until it runs or is cleared (the next step
//     of a chain), if that run changed the page, or another run of its
//     chain (the callbacks that scheduled one another) did within the last
//     maxLoopPeriod ms: a loop may step its animation only every few frames
//     (GSAP's ticker skips frames less than 4 ms apart, as a settle's are;
//     a game loop at a fixed rate), and the runs in between change nothing;
//     also one that a run within timerWindow of input scheduled, changed or
//     not (a short timer counted in answer to input, or a loop that was
//     running already, such as GSAP's awake ticker), as the first steps of
//     an animation often change nothing (its progress is 0, or an eased
//     start has not moved a whole pixel yet). Intervals of at most
//     maxLoopPeriod are counted again by such a run too.
//
// A poll changes nothing, so it is never counted past its first run (or
// maxLoopPeriod ms after its chain last changed the page); a loop that
// changes the page forever is an endless animation, which settling waits
// out until its timeout and then reports.
//
// The page's own scripts run after the timer script and may replace any
// built-in it would call (Zone.js wraps the timer functions, a polyfill
// replaces a built-in it finds wanting, a hostile page anything). So what
// the script runs later (its wrappers, its listeners, the probes that
// animationsJS and frameFenceJS call) uses only functions it saved before
// any of them ran, called through the Reflect.apply it saved, and keeps
// its tables in objects without a prototype: a page can neither break its
// own timers through Spotter's wrappers nor change what they count
// (TestSettleAnimations' hostile variants).
//
// Nor can a page tell that the script is there, and so behave otherwise
// under Spotter than without it (a bot check, a library that tests for
// native functions): each wrapper is a Proxy of the function it wraps, so
// its name, length and properties are the original's, and
// Function.prototype.toString (itself such a proxy) shows the original's
// source, "[native code]", for it; no property is added to any function.
// The probes are constants of the global lexical scope, not properties of
// the global object, under names chosen at random per process (probeName):
// no enumeration of the window finds them, no page script can overwrite
// them, and no fixed name gives Spotter away (TestTimerScriptHidden).
const (
	timerBinding  = "__spotterTimers"
	timerWindow   = 100 // ms
	timerDepth    = 3
	rafDepth      = 12
	maxTimerDelay = 500 // ms
	// maxTimerWait bounds how long a document's count may stay above zero
	// and still hold a capture: a counted animation frame of an iframe
	// that is not drawn never runs.
	maxTimerWait = 1500 * time.Millisecond
	// maxLoopPeriod is the longest interval or timeout, in ms, that counts
	// as the step of a script animation.
	maxLoopPeriod = 100
	// loopIdleRuns is how many runs in a row of an interval must change
	// nothing before it no longer counts as an animation.
	loopIdleRuns = 2
)

var (
	// animProbeName is the page's function that returns its count of
	// script animations.
	animProbeName = probeName()
	// frameProbeName is the page's function that returns a promise of the
	// page's next animation frame (frameFenceJS).
	frameProbeName = probeName()
)

// probeName returns a name for a probe of the timer script: random, so
// that a page can neither look for it nor declare it first.
func probeName() string {
	return "_" + strings.ToLower(rand.Text())
}

// timerScript is a classic script whose only global names are the two
// probes, lexical constants (undefined where the script did not install
// its wrappers: without the binding, or run twice in one document).
var timerScript = `const [` + animProbeName + `, ` + frameProbeName + `] = (() => {
	// Strict, so that a page's callback sees the this the browser gives
	// it (undefined for an animation frame), and its caller is null.
	"use strict";
	const g = globalThis;
	const report = g[` + strconv.Quote(timerBinding) + `];
	if (typeof report !== "function") return [];
	try { delete g[` + strconv.Quote(timerBinding) + `]; } catch (e) {}
	const window = ` + strconv.Itoa(timerWindow) + `, maxDelay = ` + strconv.Itoa(maxTimerDelay) + `;
	const loopPeriod = ` + strconv.Itoa(maxLoopPeriod) + `, idleRuns = ` + strconv.Itoa(loopIdleRuns) + `;
	// What runs after the page's scripts started uses only what is saved
	// here, before any of them ran, and objects without a prototype: a page
	// that replaces Reflect.apply, performance.now, Number, the array
	// iterator or the methods of Array, Set, Map or MutationObserver must
	// neither break the timers it wraps nor fool the counts.
	const apply = Reflect.apply, create = Object.create, num = Number, perf = performance, perfNow = perf.now;
	const nativeFrame = g.requestAnimationFrame, Prom = Promise;
	const takeRecords = g.MutationObserver && MutationObserver.prototype.takeRecords;
	const now = () => apply(perfNow, perf, []);
	const table = () => create(null);
	// disguise returns a Proxy of native whose calls run trap(self, a):
	// to the page it is native itself (name, length, properties, source),
	// and the saved toString below shows native's source for it. The
	// handler has no prototype, so that a page cannot add traps to it.
	const fnProto = Function.prototype, nativeToString = fnProto.toString, Px = Proxy;
	const disguised = table();
	let nDisguised = 0;
	const disguise = (native, trap) => {
		const h = table();
		h.apply = (t, self, a) => trap(self, a);
		const p = new Px(native, h);
		disguised[nDisguised++] = p;
		disguised[nDisguised++] = native;
		return p;
	};
	const nativeOf = f => {
		for (let i = 0; i < nDisguised; i += 2) if (disguised[i] === f) return disguised[i + 1];
		return f;
	};
	const toStr = disguise(nativeToString, (self, a) => apply(nativeToString, nativeOf(self), a));
	// withFirst is an array-like of the items of a (not empty), the first
	// replaced by first, for apply.
	const withFirst = (first, a) => {
		const o = table();
		const n = a.length;
		for (let i = 1; i < n; i++) o[i] = a[i];
		o[0] = first;
		o.length = n;
		return o;
	};
	let lastInput = -1e9, lastFire = -1e9, fireDepth = 0, running = null, pending = 0, inputs = 0;
	const send = () => { try { report("" + pending); } catch (e) {} };
	for (const type of ["pointerdown", "pointerup", "pointerover", "mousedown", "mouseup", "click", "dblclick",
		"contextmenu", "keydown", "keyup", "input", "change", "submit", "wheel", "focusin", "drop"])
		addEventListener(type, () => { lastInput = now(); inputs++; }, {capture: true, passive: true});
	// frame notes the animation frame of time ft: the first to run since
	// an input event moves the input's time to it. While frames are held
	// the wall time from an input to the next frame is the capture's (a
	// screenshot asked for seconds after a click), not the page's, and
	// the windows below are of the page's time after the input.
	let frameTime = -1, frameInputs = 0;
	const frame = ft => {
		if (ft === frameTime) return;
		frameTime = ft;
		if (frameInputs !== inputs) { frameInputs = inputs; lastInput = now(); }
	};

	// Script animations: loops that change the page. anim counts short
	// intervals until their first run and while their runs change the
	// page, and the timeouts and animation frames that a run which
	// changed the page scheduled, until they run. A run changes the page
	// if the DOM mutated during it, or it drew on a canvas, or something
	// scrolled since the run before.
	let anim = 0, drew = false, scrolled = false, steps = null, changes = 0, lastChanged = false;
	let mo = null;
	try {
		mo = new MutationObserver(r => { changes += r.length; });
		mo.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
	} catch (e) {}
	const taken = () => { try { return mo ? apply(takeRecords, mo, []).length : 0; } catch (e) { return 0; } };
	addEventListener("scroll", () => { scrolled = true; changes++; }, {capture: true, passive: true});
	const c2d = globalThis.CanvasRenderingContext2D && CanvasRenderingContext2D.prototype;
	if (c2d) for (const name of ["clearRect", "fillRect", "strokeRect", "fill", "stroke", "drawImage", "putImageData", "fillText", "strokeText"]) {
		const orig = c2d[name];
		if (typeof orig === "function") c2d[name] = disguise(orig, (self, a) => { drew = true; changes++; return apply(orig, self, a); });
	}
	// tracked runs fn as a timer's callback and reports whether the run
	// changed the page; the short timers and frames it scheduled become
	// animation steps if it did, or if the run is of a timer counted in
	// answer to input or within window of input (grace): the first steps
	// of an animation often change nothing yet (its progress is 0, or an
	// eased start has not moved a whole pixel), or if a run of its chain
	// (the callbacks that scheduled it, one from the other) changed the
	// page within the last loopPeriod ms: a loop that steps its animation
	// only every few frames (GSAP's ticker when frames come less than 4 ms
	// apart, a game loop at a fixed rate) has runs that change nothing in
	// between. chain is when the run's chain last changed the page.
	const tracked = (fn, self, a, grace, chain) => {
		changes += taken();
		const prevSteps = steps, mine = table();
		mine.n = 0;
		steps = mine; drew = false;
		let changed = false;
		try { return apply(fn, self, a); }
		finally {
			steps = prevSteps;
			const n = taken();
			changes += n;
			changed = n > 0 || drew || scrolled;
			drew = false; scrolled = false;
			const t = now(), last = changed ? t : chain;
			const live = changed || grace || t - last <= loopPeriod;
			for (let i = 0; i < mine.n; i++) {
				const s = mine[i];
				s.chain = last;
				if (live && !s.done) { s.anim = true; anim++; }
			}
			lastChanged = changed;
		}
	};
	const stepDone = s => { if (s && !s.done) { s.done = true; if (s.anim) { s.anim = false; anim--; } } };
	// The visual viewport's offset and scale, read with the getters as
	// they were before any script of the page ran, so that a page that
	// replaces window.visualViewport or its getters changes nothing here.
	const getter = (proto, name) => {
		try { const p = Object.getOwnPropertyDescriptor(proto, name); return p && p.get; } catch (e) { return null; }
	};
	const vv = g.visualViewport, vvp = g.VisualViewport && VisualViewport.prototype;
	const vvLeft = getter(vvp, "pageLeft"), vvTop = getter(vvp, "pageTop"), vvScale = getter(vvp, "scale");
	const view = () => {
		try { return [1, apply(vvLeft, vv, []), apply(vvTop, vv, []), apply(vvScale, vv, [])]; } catch (e) { return [0, 0, 0, 0]; }
	};
	// The document's CSS animations, CSS transitions and Web Animations
	// that run, [will end, never end] ([-1, 0] if unknown), read the same
	// way.
	const doc = document, getAnimations = g.Document && Document.prototype.getAnimations;
	const ap = g.Animation && Animation.prototype, playState = getter(ap, "playState"), effect = getter(ap, "effect");
	const timing = g.AnimationEffect && AnimationEffect.prototype.getComputedTiming;
	const css = () => {
		let ending = 0, endless = 0;
		try {
			const list = apply(getAnimations, doc, []);
			for (let i = 0; i < list.length; i++) {
				const a = list[i];
				if (apply(playState, a, []) !== "running") continue;
				const e = apply(effect, a, []);
				const t = e ? apply(timing, e, []) : null;
				if (t && t.iterations === Infinity) endless++;
				else ending++;
			}
		} catch (e) { return [-1, 0]; }
		return [ending, endless];
	};
	// The probes, returned at the end as the script's constants: a page
	// cannot put answers of its own in their place.
	const animProbe = () => { const v = view(), c = css(); return [anim, changes + taken(), v[0], v[1], v[2], v[3], c[0], c[1]]; };
	// The next animation frame, by the browser's own requestAnimationFrame:
	// not the page's (which may wrap it), and not counted.
	const frameProbe = () => new Prom(resolve => { apply(nativeFrame, g, [() => resolve(0)]); });

	// depth is the chain depth of a callback scheduled now, or -1 if it is
	// not counted.
	const depth = max => {
		const t = now();
		if (t - lastInput <= window) return 0;
		if (t - lastFire <= window && fireDepth <= max) return fireDepth;
		return -1;
	};
	// The tables below are keyed by timer id, as the browser reads an id:
	// clearTimeout("5") clears timer 5.
	const wrap = (schedule, cancel, max, short, loop, timeouts) => {
		const counted = table(), stepOf = table();
		const add = (self, a) => {
			const fn = a[0], delay = a[1];
			if (typeof fn !== "function") return apply(schedule, g, a);
			const d = short(delay) && fn !== running ? depth(max) : -1;
			const step = steps && loop(delay) ? {anim: false, done: false, chain: -1e9} : null;
			let id;
			const run = function (...a) {
				const c = id in counted, prev = running, mine = stepOf[id];
				const chain = mine ? mine.chain : -1e9;
				if (c) delete counted[id];
				stepDone(mine); delete stepOf[id];
				running = fn;
				if (c) { lastFire = now(); fireDepth = d + 1; }
				if (!timeouts) frame(a[0]);
				try { return tracked(fn, this, a, c || now() - lastInput <= window, chain); }
				finally { running = prev; if (c) { pending--; send(); } }
			};
			id = apply(schedule, g, withFirst(run, a));
			if (d >= 0) { counted[id] = true; pending++; send(); }
			if (step) { stepOf[id] = step; steps[steps.n++] = step; }
			return id;
		};
		const remove = (self, a) => {
			const id = a[0];
			try {
				if (id in counted) { delete counted[id]; pending--; send(); }
				stepDone(stepOf[id]); delete stepOf[id];
				if (timeouts) clearLoop(id); // clearTimeout also clears intervals
			} catch (e) {} // an id no table can hold: the browser judges it
			return apply(cancel, g, a);
		};
		return [add, remove];
	};
	// Intervals of at most loopPeriod: counted until their first run, and
	// then while a run of the last idleRuns changed the page.
	const loops = table();
	const clearLoop = id => {
		const l = loops[id];
		if (l) { delete loops[id]; if (l.counted) anim--; }
	};
	const si = setInterval;
	const interval = (self, a) => {
		const fn = a[0], delay = a[1];
		if (typeof fn !== "function" || num(delay) > loopPeriod) return apply(si, g, a);
		const l = {counted: true, idle: 0};
		const run = function (...a) {
			const prev = running;
			running = fn;
			try { return tracked(fn, this, a, false, -1e9); }
			finally {
				running = prev;
				if (lastChanged || now() - lastInput <= window) { l.idle = 0; if (!l.counted && loops[id] === l) { l.counted = true; anim++; } }
				else if (++l.idle >= idleRuns && l.counted) { l.counted = false; anim--; }
			}
		};
		const id = apply(si, g, withFirst(run, a));
		loops[id] = l; anim++;
		return id;
	};
	const [st, ct] = wrap(setTimeout, clearTimeout, ` + strconv.Itoa(timerDepth) + `, d => !(num(d) > maxDelay), d => !(num(d) > loopPeriod), true);
	const [raf, caf] = wrap(requestAnimationFrame, cancelAnimationFrame, ` + strconv.Itoa(rafDepth) + `, () => true, () => true, false);
	// clearInterval and clearTimeout clear from one list of timers, so
	// both run ct (which calls the browser's clearTimeout).
	for (const [name, trap] of [["setTimeout", st], ["clearTimeout", ct], ["requestAnimationFrame", raf], ["cancelAnimationFrame", caf],
		["setInterval", interval], ["clearInterval", ct]])
		Object.defineProperty(g, name, {value: disguise(g[name], trap), writable: true, configurable: true, enumerable: true});
	Object.defineProperty(fnProto, "toString", {value: toStr, writable: true, configurable: true, enumerable: false});
	return [animProbe, frameProbe];
})();`

// watchTimers installs timerScript in the active tab: for every new
// document, and at once for the current one.
func (d *Display) watchTimers(ctx context.Context) error {
	if _, err := call(ctx, d, runtime.AddBinding, runtime.AddBindingParams{Name: timerBinding}); err != nil {
		return err
	}
	_, err := call(ctx, d, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: timerScript, RunImmediately: new(true),
	})
	return err
}

// animationsJS asks the page what still animates: the CSS animations, CSS
// transitions and Web Animations that run (or wait out a delay) and will
// end, and the script animations that timerScript counts; and, apart,
// the endless ones (iterations: Infinity). The timer script's probe
// counts them all with what it saved; animationsJS counts the CSS and Web
// Animations itself only in a document without it. FrameControl does not wait for
// endless ones: they never end, so only the frames they draw can tell
// whether they show (a spinner that spins draws; one hidden by opacity or
// off screen does not). Screencast mode waits for them, as its frames of
// a compositor animation can look like pauses on a loaded machine.
var animationsJS = `(() => {
	// The probe, a constant of the timer script (undeclared where it did
	// not run).
	let r = null;
	try { if (typeof ` + animProbeName + ` === "function") r = ` + animProbeName + `(); } catch (e) {}
	const fin = x => typeof x === "number" && x - x === 0;
	const ok = r !== null && typeof r === "object" && r.length === 8;
	let css = 0, endless = 0;
	if (ok && fin(r[6]) && r[6] >= 0 && fin(r[7])) {
		css = r[6]; endless = r[7];
	} else {
		// A document without the timer script, or one whose animations it
		// could not read.
		for (const a of document.getAnimations()) {
			if (a.playState !== "running") continue;
			const t = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming() : null;
			if (t && t.iterations === Infinity) endless++;
			else css++;
		}
	}
	// The viewport: [1, left, top, scale] if the timer script read it,
	// finite numbers.
	const view = ok && r[2] === 1 && fin(r[3]) && fin(r[4]) && fin(r[5]) ? [1, r[3], r[4], r[5]] : [0, 0, 0, 0];
	return [css, ok && fin(r[0]) ? r[0] : 0, ok && fin(r[1]) ? r[1] : -1, endless, view[0], view[1], view[2], view[3]];
})()`

// animations is the answer of animationsJS. changes counts what the page
// changed so far (DOM mutations, canvas drawing, scrolls; -1 if unknown):
// two equal counts say that no script changed the page in between.
type animations struct {
	css, script int
	changes     int64
	endless     int      // running CSS or Web Animations that never end
	view        viewport // the visual viewport as the page answered
}

// viewport is the page's visual viewport: its offset in the document (CSS
// px) and its pinch-zoom scale, if known (ok).
type viewport struct {
	scroll actions.Point
	pinch  float64
	ok     bool
}

func (a animations) running() bool { return a.css > 0 || a.script > 0 }

// String describes what still animates, for the model.
func (a animations) String() string {
	switch {
	case a.css > 0 && a.script > 0:
		return fmt.Sprintf("%d CSS or Web animation(s) and %d script animation(s) (a timer or animation-frame loop that changes the page) still running", a.css, a.script)
	case a.script > 0:
		return fmt.Sprintf("%d script animation(s) (a timer or animation-frame loop that changes the page) still running", a.script)
	}
	return fmt.Sprintf("%d animation(s) still running", a.css)
}

// animations asks the page what still animates (animationsJS). A page
// whose scripts broke the probe answers nothing running, so that settle
// relies on the other signals.
func (d *Display) animations(ctx context.Context) (animations, error) {
	res, err := call(ctx, d, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    animationsJS,
		ReturnByValue: new(true),
		Silent:        new(true),
	})
	if err != nil {
		return animations{}, err
	}
	var n [8]float64
	if res.ExceptionDetails != nil || res.Result == nil || json.Unmarshal(res.Result.Value, &n) != nil {
		return animations{changes: -1}, nil
	}
	a := animations{css: int(max(n[0], 0)), script: int(max(n[1], 0)), changes: int64(max(n[2], -1)), endless: int(max(n[3], 0))}
	if n[4] == 1 && n[7] > 0 {
		a.view = viewport{scroll: actions.Pt(n[5], n[6]), pinch: n[7], ok: true}
	}
	return a, nil
}
