package cdp

import (
	"context"
	"strconv"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
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
// input event (a pointer, key, wheel or form event), or within timerWindow
// of the start of a counted callback, up to a chain depth (timerDepth
// for setTimeout, rafDepth for animation frames); a setTimeout is counted
// only if its delay is at most maxTimerDelay. A callback that schedules
// itself again (a polling loop, an animation loop) is never counted, and
// setInterval never is: what runs forever cannot be waited for, and a
// polling page should not make every step wait.
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
)

var timerScript = `(() => {
	const report = globalThis[` + strconv.Quote(timerBinding) + `];
	if (typeof report !== "function" || globalThis.setTimeout.__spotter) return;
	try { delete globalThis[` + strconv.Quote(timerBinding) + `]; } catch (e) {}
	const window = ` + strconv.Itoa(timerWindow) + `, maxDelay = ` + strconv.Itoa(maxTimerDelay) + `;
	const now = () => performance.now();
	let lastInput = -1e9, lastFire = -1e9, fireDepth = 0, running = null, pending = 0;
	const send = () => { try { report(String(pending)); } catch (e) {} };
	for (const type of ["pointerdown", "pointerup", "pointerover", "mousedown", "mouseup", "click", "dblclick",
		"contextmenu", "keydown", "keyup", "input", "change", "submit", "wheel", "focusin", "drop"])
		addEventListener(type, () => { lastInput = now(); }, {capture: true, passive: true});
	// depth is the chain depth of a callback scheduled now, or -1 if it is
	// not counted.
	const depth = max => {
		const t = now();
		if (t - lastInput <= window) return 0;
		if (t - lastFire <= window && fireDepth <= max) return fireDepth;
		return -1;
	};
	const wrap = (schedule, cancel, max, short) => {
		const live = new Set();
		const add = function (fn, delay, ...args) {
			if (typeof fn !== "function") return Reflect.apply(schedule, globalThis, [fn, delay, ...args]);
			const d = short(delay) && fn !== running ? depth(max) : -1;
			let id;
			const run = function (...a) {
				const counted = live.delete(id), prev = running;
				running = fn;
				if (counted) { lastFire = now(); fireDepth = d + 1; }
				try { return Reflect.apply(fn, this, a); }
				finally { running = prev; if (counted) { pending--; send(); } }
			};
			id = Reflect.apply(schedule, globalThis, [run, delay, ...args]);
			if (d >= 0) { live.add(id); pending++; send(); }
			return id;
		};
		const remove = function (id) {
			if (live.delete(id)) { pending--; send(); }
			return Reflect.apply(cancel, globalThis, [id]);
		};
		return [add, remove];
	};
	const [st, ct] = wrap(setTimeout, clearTimeout, ` + strconv.Itoa(timerDepth) + `, d => !(Number(d) > maxDelay));
	const [raf, caf] = wrap(requestAnimationFrame, cancelAnimationFrame, ` + strconv.Itoa(rafDepth) + `, () => true);
	st.__spotter = true;
	for (const [name, f] of [["setTimeout", st], ["clearTimeout", ct], ["requestAnimationFrame", raf], ["cancelAnimationFrame", caf]])
		Object.defineProperty(globalThis, name, {value: f, writable: true, configurable: true, enumerable: true});
})()`

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
