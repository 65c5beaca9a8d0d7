// Package playwright is a Spotter display on Playwright, for teams whose
// browser automation already runs on it: a headless Chromium driven through
// playwright-go, which captures screenshots of a page and performs mapped
// actions in it with Playwright's mouse and keyboard.
//
// A [Browser] ([Launch]) is one Playwright driver and the Chromium it
// launched, or the Chromium of a remote Playwright browser server it
// connected to (Config.WSEndpoint: a Playwright grid, or a
// chromium.launchServer endpoint); closing a connected Browser disconnects
// and leaves the server running. Each [Display] is the pages (tabs) of a
// browser context of its own, so displays that share a browser share no
// cookies, storage or history ([Browser.NewDisplay]). [Open] starts or connects a
// browser with one display for the common case of one session per
// process. A Display implements the harness's Display interface, and the
// inspection interfaces of the harness and the approval gate, by its
// method set:
//
//	Capture(ctx, screen.CaptureOptions) (screen.Shot, error)
//	Perform(ctx, screen.Mapped) error
//	HitTest(ctx, actions.Point) (screen.Target, error)
//	Focused(ctx) (screen.Target, error)
//	Dialog() (screen.Dialog, bool)
//
// HitTest and Focused run screen/cdp's hit-test script in an isolated
// world over the page's CDP session, so both browser backends describe an
// element alike.
//
// # The driver
//
// playwright-go runs Playwright's Node.js driver. This package never
// downloads it, nor a browser: install-driver.sh (beside this file) unpacks
// playwright-core from the npm registry into a driver directory and links
// Node.js into it, and Open launches the system's Chromium (Config.Exec).
// The driver's version must be the one playwright-go pairs with, 1.52.0.
//
// # Settling and capturing
//
// Capture first waits, bounded by a settle timeout, until the page is quiet:
// no network request in flight (requests older than the timeout and event
// streams are ignored), the document loaded, and no DOM change, scroll or
// running animation for a quiet window of animation frames, observed by a
// short script in the page. It then takes the screenshot with Playwright at
// one image pixel per CSS pixel (per device pixel for an image larger than
// the clip's CSS size) and resizes it in Go if the size asked for differs:
// Playwright has no arbitrary screenshot scale.
//
// # Input
//
// Perform takes coordinates in CSS pixels of the viewport. Modifiers held
// during a pointer action are pressed with the keyboard, as Playwright
// does. Keys are pressed by their DOM code ("KeyA", "Digit1", "Enter"), so
// that Playwright applies Shift as a keyboard would, and characters that
// need Shift on a US keyboard are typed with Shift held. A few canonical
// keys Playwright lacks or sends differently (F13-F24, media keys, and the
// numeric keypad, whose digits Playwright types as with Num Lock off and
// whose other keys it releases as if they were not on the keypad) fail with
// an error wrapping screen.ErrUnsupported, as do the back and forward mouse
// buttons.
//
// Playwright's calls take no context; a Perform or Capture whose context
// ends, or whose page does not answer within the command timeout, returns
// at once, and the call it left behind must finish (or fail when the
// display closes) before the next one starts.
//
// A JavaScript dialog blocks the page until the Dialog action answers it
// (or, with Config.DismissDialogs, is dismissed as it opens): meanwhile
// Dialog reports it, Capture returns the last image with the dialog in its
// notes, and other actions fail with words saying to answer it. Upload
// answers the file chooser a page opened. Downloads are refused, with a
// note.
//
// A tab that a page opens (a link with target=_blank, window.open) becomes
// the active tab, which Capture shows and Perform acts on; Capture waits
// for a tab a page said it opens (CDP's Page.windowOpen), since Playwright
// announces it a little later. A tab that closes gives way to the last one
// (to about:blank if none is left). ListTabs, SwitchTab and CloseTab list,
// switch and close tabs; each change leaves a note listing them.
//
// A browser that exits, a connection to a server that closes, or a page
// that crashes or closes, makes Capture and Perform fail with an error
// wrapping screen.ErrGone.
package playwright
