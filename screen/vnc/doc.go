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
// Perform returns once the server has handled its input: the client asks
// for the Fence pseudo-encoding and, with a server that does fences (as
// TigerVNC does), follows the input with a fence and waits for its
// answer. Capture then waits, bounded by Config.SettleTimeout, until the screen
// has settled: no update for a quiet window, and, when input was handled
// after the latest update, a reaction time without one (an input that
// changes nothing must not hold a capture up for long). Both adapt to a
// loaded machine: the quiet window is Config.QuietWindow, or twice the
// longest of the latest gaps between the frames of an animation (updates
// less than a quarter second apart; at most half a second), so that an
// animation whose frames come far apart is waited for; the reaction time is Config.ReactionTime, or twice the longest of
// the desktop's latest reactions to input (at most a second), so that a
// desktop that paints late is waited for. Changes that happen on their
// own, such as a window that opens seconds after a command, appear in
// whatever capture follows their arrival.
//
// # Pixels and input
//
// On a desktop one CSS pixel is one screen pixel: Frame.DPR is 1, and there
// is no URL, so Navigate, GoBack and GoForward fail with an error wrapping
// screen.ErrUnsupported. Capture scales with x/image/draw (ApproxBiLinear
// down to half size, BiLinear below, CatmullRom to enlarge a zoom region).
//
// # The pointer
//
// Captures never show the mouse pointer, as captures of the browser
// displays (screen/cdp, screen/playwright) never do: a model sees the same
// pixels for the same screen, nothing of the picture hides under the
// pointer, and cursor_position tells where it is. The client declares the
// Cursor pseudo-encoding (it draws the pointer itself, and never does), so
// the server leaves the pointer out of the pixels while it is where this
// client last put it. TigerVNC's Xvnc draws it into the pixels until a
// client has put it somewhere, so Dial puts it at the centre of the
// screen, where X servers start it; Xvnc also draws it a second after
// something else moved it (another viewer, xdotool, an application that
// warps it), until the next pointer action.
//
// # Keys and the mouse
//
// Keys are sent as X keysyms from the actions key table, characters of a US
// keyboard that need Shift with Shift held, and other characters as their
// own keysyms (Latin-1 keysyms, or 0x01000000 plus the code point). Xvnc
// maps such a keysym to an unused key code the first time it sees it and
// never unmaps it, so a desktop can type only so many distinct characters
// that are not on a US keyboard: about 20 with Xvnc's default keymap, about
// 100 on a desktop from package desktop. Further ones are dropped by the
// server, and the client cannot tell. Applications see each such character
// as a key press: Chromium reports a keydown with an empty key for it, as
// its keymap lags behind Xvnc's mapping, and may drop the first use of a
// newly mapped character, now and then: the race is Chromium's.
//
// The client asks for the LEDState pseudo-encoding and keeps NumLock on
// and CapsLock off before the keys it sends (Dial sets them so), so that
// keypad keys type digits without a NumLock press that no action asked
// for, and letters come out as sent.
//
// The clicks of a double or triple click go out 20 ms apart, each after
// the server handled the previous one, so that X stamps them with distinct
// times (Chromium counts presses of the same millisecond as separate
// clicks). A drag stops at every point of its path for 50 ms, a few
// frames (longer on a desktop that reacts to input late), so that
// applications that merge queued motion events (Chromium, GTK) still see
// the pointer at each point. Wheel scrolling is sent as presses of buttons
// 4 to 7, one per Config.WheelStep pixels (default [DefaultWheelStep], the
// 120 px Chromium on X scrolls per step).
//
// A connection that drops, or a server that sends something this client
// cannot parse, makes Capture and Perform fail with an error that wraps
// screen.ErrGone.
//
// Package [github.com/spotter-harness/spotter/screen/vnc/desktop] starts a
// local desktop (TigerVNC's Xvnc, a window manager and apps) to connect to.
package vnc
