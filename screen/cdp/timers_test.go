package cdp

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// fingerprintJS is what a page can learn about the functions the timer
// script wraps, as a bot check or a library that tests for native
// functions reads them: their source, name, length, own properties and
// property descriptors, whether clearTimeout is clearInterval, and what
// constructing one throws.
const fingerprintJS = `(() => {
	const fts = Function.prototype.toString, fp = Function.prototype;
	const c2d = CanvasRenderingContext2D.prototype;
	const fns = [["window", window, "setTimeout"], ["window", window, "clearTimeout"], ["window", window, "setInterval"],
		["window", window, "clearInterval"], ["window", window, "requestAnimationFrame"], ["window", window, "cancelAnimationFrame"],
		["Function.prototype", fp, "toString"]];
	for (const n of ["clearRect", "fillRect", "strokeRect", "fill", "stroke", "drawImage", "putImageData", "fillText", "strokeText"])
		fns.push(["CanvasRenderingContext2D.prototype", c2d, n]);
	const out = {};
	for (const [where, obj, name] of fns) {
		const f = obj[name], d = Object.getOwnPropertyDescriptor(obj, name);
		let constructed = "no error";
		try { new f(); } catch (e) { constructed = e.constructor.name; }
		out[where + "." + name] = [fts.call(f), String(f), f.name, f.length, Object.getOwnPropertyNames(f).sort().join(","),
			typeof f.prototype, d ? [d.writable, d.enumerable, d.configurable].join(",") : "none", constructed];
	}
	out.sameClear = String(clearTimeout === clearInterval);
	out.toStringOfToString = fts.toString();
	return out;
})()`

// The timer script cannot be seen from the page: the functions it wraps
// show the page exactly what the browser's own show (compared with an
// isolated world of the same page, whose built-ins no script touched),
// the page has no global that a page without the script lacks, and the
// wrapped timers behave as the browser's: clearInterval clears a timeout,
// clearTimeout an interval, a string handler runs, and a callback gets the
// this the browser gives it and no caller.
func TestTimerScriptHidden(t *testing.T) {
	integration(t)
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "static.html")

	main := eval[map[string]any](t, d, fingerprintJS)
	raw, err := d.Eval(t.Context(), fingerprintJS)
	if err != nil {
		t.Fatalf("Eval(fingerprint) in an isolated world = %v", err)
	}
	var pristine map[string]any
	if err := json.Unmarshal(raw, &pristine); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pristine, main); diff != "" {
		t.Errorf("the page sees the timer script's wrappers (-browser's own +page's):\n%s", diff)
	}
	// The script did run, or the comparison above would prove nothing.
	if typ := eval[string](t, d, "typeof "+animProbeName); typ != "function" {
		t.Errorf("the timer script's probe is %s, want a function: the script did not run", typ)
	}

	names := `Object.getOwnPropertyNames(window).sort()`
	page := eval[[]string](t, d, names)
	raw, err = d.Eval(t.Context(), names)
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	if err := json.Unmarshal(raw, &own); err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, n := range page {
		if !slices.Contains(own, n) || strings.Contains(strings.ToLower(n), "spotter") {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the page's window has properties a page without the timer script lacks: %q", extra)
	}

	cleared := eval[[]int](t, d, `new Promise(done => {
		const ran = [0, 0, 0];
		const t = setTimeout(() => ran[0]++, 0);
		clearInterval(t);
		const i = setInterval(() => ran[1]++, 1);
		clearTimeout(i);
		window.__ran = ran;
		setTimeout("window.__ran[2]++", 0);
		setTimeout(() => done(ran), 50);
	})`)
	if want := []int{0, 0, 1}; !slices.Equal(cleared, want) {
		t.Errorf("timeout cleared by clearInterval, interval cleared by clearTimeout, string handler ran: %v, want %v", cleared, want)
	}

	// What a callback sees of its call: this (the window for a timer,
	// undefined for a strict animation frame callback) and its caller.
	// A frame-controlled page draws frames only when a capture runs them.
	eval[int](t, d, `(() => {
		const seen = window.__seen = {};
		setTimeout(function () { "use strict"; seen.timeout = this === window; }, 0);
		setTimeout(function cb() { seen.caller = cb.caller === null; }, 0);
		requestAnimationFrame(function () { "use strict"; seen.frame = this === undefined; });
		return 0;
	})()`)
	want := map[string]bool{"timeout": true, "caller": true, "frame": true}
	var got map[string]bool
	for range 20 {
		capture(t, d, screen.CaptureOptions{})
		if got = eval[map[string]bool](t, d, "window.__seen"); len(got) == len(want) {
			break
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("what the page's callbacks see: %v, want %v", got, want)
	}
}

// TestRealLibraries runs the settle and the timer script against real
// animation libraries, installed from npm by install-weblibs.sh: jQuery
// 1.12's slideToggle, whose steps all run on one shared setInterval of 13
// ms (the accordion that issue 17 found half-open); GSAP 3's and Anime.js
// 4's eased tweens, each on its own requestAnimationFrame engine; and
// Bootstrap 5's Collapse, a CSS height transition that its script ends on
// transitionend.
// Each runs alone and under Zone.js 0.15 (Angular's), which wraps every
// timer function, requestAnimationFrame, Promise and
// Function.prototype.toString over Spotter's own wrappers. Every capture
// after a click must show the animation's end, as in TestSettleAnimations
// (same panels, same -anim.runs and -anim.ms); under Zone.js the page's
// timers still show native source.
func TestRealLibraries(t *testing.T) {
	integration(t)
	for _, lib := range []string{"jquery-1.12.4.min.js", "zone-0.15.1.umd.min.js", "gsap-3.15.0.min.js",
		"anime-4.5.0.umd.min.js", "bootstrap-5.3.8.bundle.min.js", "bootstrap-5.3.8.min.css"} {
		if _, err := os.Stat(filepath.Join(webLibsDir(), lib)); err != nil {
			t.Fatalf("%v: run screen/cdp/install-weblibs.sh (make test does)", err)
		}
	}
	durations := animDurations(t)
	libs := []struct {
		name    string // libs.html's ?lib=
		version string // an expression for the library's version
		want    string
	}{
		{"jquery", `typeof jQuery === "function" ? jQuery.fn.jquery : "none"`, "1.12.4"},
		{"gsap", `typeof gsap === "object" ? gsap.version : "none"`, "3.15.0"},
		{"anime", `typeof anime === "object" && window.AnimeJS ? window.AnimeJS[0].version : "none"`, "4.5.0"},
		{"bootstrap", `typeof bootstrap === "object" ? bootstrap.Collapse.VERSION : "none"`, "5.3.8"},
	}
	for _, lib := range libs {
		for _, zone := range []bool{false, true} {
			name := lib.name
			t.Run(fmt.Sprintf("%s/zone=%v", name, zone), func(t *testing.T) {
				t.Parallel()
				d := newDisplay(t, DisplayConfig{})
				for _, ms := range durations {
					page := fmt.Sprintf("libs.html?lib=%s&ms=%d", name, ms)
					if zone {
						page += "&zone=1"
					}
					load(t, d, page)
					got := eval[[]string](t, d, `[`+lib.version+`,
						typeof Zone === "function" ? "zone" : "none", Function.prototype.toString.call(setTimeout)]`)
					wantZone := map[bool]string{false: "none", true: "zone"}[zone]
					if got[0] != lib.want || got[1] != wantZone {
						t.Fatalf("%s: the library %s, Zone.js %s; want %s and %s", page, got[0], got[1], lib.want, wantZone)
					}
					if !strings.Contains(got[2], "[native code]") {
						t.Errorf("%s: the page's setTimeout shows %q, want native source", page, got[2])
					}
					toggleRuns(t, d, page, name)
				}
			})
		}
	}
}

// TestCaptureLongAfterInput asks for the screenshot two seconds after the
// click, as a client does that clicks in one call and asks for a
// screenshot in the next: the frames are held in between, so the page's
// animation starts only when the capture begins one, long after the
// input's window. The capture must still wait for the animation's end.
// (The wait is the scenario, time passing between two calls, not a
// synchronisation.) With the input's window in wall time, GSAP's ticker,
// awake from the first click's tween, gave the state before the second
// click, settled in 8-11 ms, every time, with and without Zone.js.
func TestCaptureLongAfterInput(t *testing.T) {
	integration(t)
	for _, lib := range []string{"gsap", "anime", "jquery"} {
		for _, zone := range []string{"", "&zone=1"} {
			t.Run(lib+zone, func(t *testing.T) {
				t.Parallel()
				d := newDisplay(t, DisplayConfig{})
				load(t, d, fmt.Sprintf("libs.html?lib=%s&ms=600%s", lib, zone))
				open := false
				for i := range 2 {
					do(t, d, kind(actions.Click, at(200, 200)))
					open = !open
					time.Sleep(2 * time.Second)
					shot := capture(t, d, screen.CaptureOptions{Format: screen.PNG})
					if err := animCheck(decode(t, shot), lib, open); err != nil {
						t.Errorf("click %d, captured 2 s later (settled in %v): %v", i, shot.Frame.Settle.Waited, err)
					}
				}
			})
		}
	}
}
