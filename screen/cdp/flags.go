package cdp

import "github.com/spotter-harness/spotter/internal/chromeflags"

// CommandLine returns the flags of every Chromium that Spotter starts in
// mode (FrameControl or Screencast), on the host (Launch) or in a sandbox
// (internal/agent): one list, so that a browser behaves the same wherever
// it runs. It leaves out what depends on where the browser runs: the
// transport (--remote-debugging-pipe), the profile (--user-data-dir) and
// the proxy. disabled are more features to switch off (the caller's own
// --disable-features, taken apart by chromeflags.SplitFeatures).
//
// The list follows chromedp's defaults (after Puppeteer's): headless, no
// first-run, no throttling of background tabs; and it has none of the
// browser's own traffic (internal/chromeflags).
// Chromium's own sandbox is off (--no-sandbox): on the host it needs
// privileges a root process cannot drop cleanly, and in a containerd
// sandbox the container is the sandbox.
func CommandLine(mode Mode, disabled ...string) []string {
	f := append(chromeflags.Switches(),
		"--headless", "--hide-scrollbars", "--mute-audio",
		"--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
		"--disable-dev-shm-usage", "--disable-breakpad", "--disable-extensions",
		"--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
		"--disable-renderer-backgrounding", "--disable-hang-monitor",
		"--disable-ipc-flooding-protection", "--disable-popup-blocking", "--disable-prompt-on-repost",
		"--enable-features=NetworkService,NetworkServiceInProcess",
		"--force-color-profile=srgb", "--safebrowsing-disable-auto-update",
		"--password-store=basic", "--use-mock-keychain", "--enable-automation",
		// Chromium reads only one --disable-features: chromedp's two, the
		// quiet ones and the caller's.
		chromeflags.DisableFeatures(append([]string{"Translate", "BlinkGenPropertyTrees"}, disabled...)...),
	)
	if mode == FrameControl {
		f = append(f,
			"--enable-begin-frame-control", "--run-all-compositor-stages-before-draw",
			// Decode images before the frame that shows them, so that a
			// frame without damage never still waits for a decode.
			"--disable-checker-imaging",
			// Run CSS animations and transitions on the main thread.
			// A compositor-thread animation that ends while frames are
			// controlled (a spinner hidden as a transition starts) can
			// leave HeadlessExperimental.beginFrame without an answer
			// for good: Chromium waits for a frame the renderer never
			// submits, and refuses every later one as "Another frame is
			// pending".
			"--disable-threaded-animation",
			// Composite every scroll box, as Chromium does by itself at
			// device pixel ratios of 1.5 and more. At DPR 1 it paints a
			// scroll box that could lose LCD text into its parent layer,
			// and a wheel turn that scrolls such a box (a textarea, a
			// list) past the part painted so far leaves beginFrame
			// without an answer for good: 6 of 6 runs of a box of 200
			// rows scrolled by 200 px stalled at its third turn, 0 of 6
			// with this flag, and 0 at DPR 2 without it. Headless
			// Chromium draws grayscale text, so screenshots lose nothing
			// (a page of text: the same image; a bordered box: 11 pixels
			// of its border differ by 1 level).
			"--enable-prefer-compositing-to-lcd-text",
		)
	}
	return f
}
