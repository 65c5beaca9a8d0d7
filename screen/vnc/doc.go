// Package vnc is Spotter's desktop display: an RFB 3.8 (VNC) client that
// captures screenshots of a whole desktop and performs mapped actions on it
// with pointer and key events, so that the harness's loop, providers and
// approvals work on any desktop a VNC server shows, not only in a browser.
//
// [Dial] connects over TCP or a unix socket, with security type None or VNC
// authentication, and returns a [Display]. It implements the harness's
// Display interface by its method set:
//
//	Capture(ctx, screen.CaptureOptions) (screen.Shot, error)
//	Perform(ctx, screen.Mapped) error
//
// # The live image
//
// A Display keeps a live copy of the screen. A goroutine of its own reads
// every framebuffer update into it (Raw, CopyRect and ZRLE encodings, and
// DesktopSize changes) and at once asks for the next incremental update, so
// the server sends changes as they happen and a capture of a screen that
// has not changed costs no round trip (and, with the same options as the
// previous capture, no encoding either). Updates are decoded into a
// private copy and applied to the live image whole, so a capture never
// shows half an update.
//
// # Settling
//
// Capture first waits, bounded by Config.SettleTimeout, until the screen
// has settled: no update for Config.QuietWindow, and, when input was sent
// after the latest update, Config.ReactionTime without one (an input that
// changes nothing must not hold a capture up for long). Changes that happen
// on their own, such as a window that opens seconds after a command, appear
// in whatever capture follows their arrival.
//
// # Pixels and input
//
// On a desktop one CSS pixel is one screen pixel: Frame.DPR is 1, and there
// is no URL, so Navigate, GoBack and GoForward fail with an error wrapping
// screen.ErrUnsupported. Capture scales with x/image/draw (ApproxBiLinear
// down to half size, BiLinear below, CatmullRom to enlarge a zoom region).
//
// The client declares that it draws the cursor itself, and never does: the
// server leaves the cursor out of the pixels while the pointer is where
// this client last put it. TigerVNC's Xvnc draws it into the pixels when
// something else moved it, and before the client's first pointer action.
//
// Keys are sent as X keysyms from the actions key table, characters of a US
// keyboard that need Shift with Shift held, and other characters as their
// own keysyms (Latin-1 keysyms, or 0x01000000 plus the code point). Xvnc
// maps such a keysym to an unused key code the first time it sees it and
// never unmaps it, so a desktop can type only so many distinct characters
// that are not on a US keyboard: about 20 with Xvnc's default keymap, about
// 100 on a desktop from package desktop. Further ones are dropped by the
// server, and the client cannot tell. Wheel scrolling is sent as presses of
// buttons 4 to 7, one per [PixelsPerWheelStep] pixels.
//
// A connection that drops, or a server that sends something this client
// cannot parse, makes Capture and Perform fail with an error that wraps
// screen.ErrGone.
//
// Package [github.com/spotter-harness/spotter/screen/vnc/desktop] starts a
// local desktop (TigerVNC's Xvnc, a window manager and apps) to connect to.
package vnc
