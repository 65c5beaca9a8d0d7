// Package approvals decides which actions need a human, and holds the
// queue in which they wait for one.
//
// A [Gate] is a harness.Approver for one session. For each action the loop
// is about to perform, it asks the display what the action reaches (a
// [HitTester] for the element under the pointer, a [FocusReporter] for the
// element keyboard input goes to, a [DialogReporter] for an open dialog),
// and evaluates its [Rules]. An action no rule flags runs at once. A
// flagged one becomes a [Request] in the [Queue] and blocks until a human
// decides ([Queue.Decide]): approve, deny with a reason the model sees, or
// edit the action (its coordinates in the screenshot's pixels, or its
// text). No decision before the timeout is a denial ("no decision within
// 5m0s"). Provider safety checks (OpenAI pending_safety_checks, Gemini
// require_confirmation) always join the same queue, whatever the
// supervision, "none" included.
//
// # Safety checks
//
// A call's safety checks are one Request with Index -1 and no Action (its
// JSON has no "action"), holding the provider's checks as it sent them
// (id, code, message) in SafetyChecks, and the frame the model saw. It can
// be approved or denied, not edited. Only an approval lets the loop
// acknowledge the checks to the provider and run the call; a denial or an
// expiry is the call's error, in words for the model.
//
// The Queue calls two hooks, synchronously, so that a server can persist
// what it holds and audit every decision (who, when, and the request as
// they saw it); [Queue.Restore] puts pending requests back after a
// restart, and a re-asked request (same session, call id and index)
// attaches to the one already pending.
//
// # Built-in rules
//
// By default every built-in rule is on. Each has a name, used in requests
// and in the rules file's disable list:
//
//	safety-check    a provider's safety check (cannot be disabled)
//	purchase        clicks on buy, pay, checkout or order controls (by what they say, in several languages,
//	                or where the form they submit goes); Enter in a form whose button or endpoint says so
//	delete          the same for delete or remove
//	send            the same for send, submit, publish or confirm
//	password        typing into a password field, or Enter in it
//	payment         typing into a payment field (autocomplete cc-*, names like card number or CVV), or Enter
//	                in it; typing anything that looks like a card number (13-19 digits passing the Luhn check)
//	outside         links, form submissions and navigation to an origin outside the allowed hosts (by the
//	                link's target, the form's action or the URL navigated to)
//	download        clicks on download links
//	file-picker     clicks on <input type=file>; the upload action
//	close-chord     chords that close a tab, a window or the browser (ctrl+w, alt+F4, meta+q...); close_tab
//	leave-page      accepting a beforeunload dialog
//	inspect-failed  the element under the pointer could not be inspected (the gate fails closed)
//
// Links and forms may reach, without a human, the origin of the page shown,
// the rules' hosts and the session's Policy hosts.
//
// # What an element says
//
// A page can make an element say one thing to a person and another to a
// screen reader: a button that shows "Buy now" with aria-label="More
// information". Rules that read what an element says read both its
// visible text (screen.Target.Text) and its accessible name
// (screen.Target.Name); either one matching flags the action, and the
// reason quotes the visible text when it, not the name, flagged it ("the
// button "More information" (it shows "Buy now")"). The visible text of a
// control (a link, a button, a form control, an element with a widget
// role) counts whole: it is the control's label. Any other element that
// acts when clicked (a <div> with a click handler, in its markup or added
// by a script, or with a pointer cursor of its own) counts when its text
// is 40 characters or less, so that a click on a clickable card that
// mentions paying is not a purchase.
//
// Only what acts when clicked says anything (screen.Target.Acts): a click
// on static text ("Thank you for your purchase!", a heading, a label with
// no control) is not flagged, whatever it says, and an operator's
// target.name or target.text condition does not match it for a click.
// The hit-test finds what acts: the nearest control around the point (a
// label stands for its control, an element inside a link or a button for
// the link or the button), else the nearest element with a handler in
// its markup or a pointer cursor of its own, else the nearest one a
// script listens on for clicks, presses or touches (read from the
// browser, not the page). Listeners on the page's body, html or document
// make nothing act; a listener on a large container (React's root) makes
// the container act, whose long text says nothing. A page that handles a
// click on a plain element only from such a container, without a pointer
// cursor, is seen as static: a region or an operator's rule covers it.
//
// What a form submits counts too: a click on a submit button, or Enter in
// one of the form's fields, is flagged when the path the form goes to says
// it ("/checkout/pay", "/api/placeOrder"), and Enter when the form's
// first submit button, which Enter presses, says it (screen.Target.FormSubmit).
// The payment rule reads, besides a field's name and autocomplete, the
// visible text of a focused element that holds no typed text. For an
// <input> the visible text is what it shows without typing: a button
// input's value, an image input's alt text, a field's placeholder; a
// typed value is never read.
//
// # Displays without a DOM
//
// A display that cannot be hit-tested (VNC) has no elements to judge. The
// rules then decide on the action alone: its kind (navigate, upload,
// close_tab, dialog), its keys, its typed text, and the regions of the
// screen it touches. Requests say so in their Note ("no DOM: decided on the
// action alone"), and the model is told once.
//
// # The rules file
//
// Rules are YAML. Every field is optional; an empty file is [Default]:
//
//	supervise: flagged        # all | flagged | none
//	timeout: 5m               # how long a request waits; then it is denied
//	hosts:                    # origins links and navigation may reach, as in actions.Policy
//	  - localhost:8080
//	  - "*.example.com"
//	disable: [send]           # built-in rules to switch off
//	keys: ["ctrl+s"]          # more chords that need a human
//	regions:                  # areas of the screenshot, in its image pixels
//	  - name: admin-menu
//	    reason: the admin menu changes production settings
//	    x: 0
//	    y: 0
//	    w: 200
//	    h: 60
//	rules:                    # your own rules: every condition given must hold
//	  - name: transfer-form
//	    reason: typing into the bank transfer form
//	    kinds: [type]
//	    url: ["^https://bank\\.example/transfer"]
//	    target:
//	      name: ["amount|recipient"]
//
// A rule's conditions: kinds (action kinds), keys (chords of keypress and
// hold_key), text (typed text), url, and target, which needs a DOM: tag,
// role, name, input_type, autocomplete, href, form_action, frame_url and
// text (lists of regular expressions matched without regard to case), and
// editable and download (true or false). Within a list, any item may
// match. The target is the element under the pointer for pointer actions,
// and the focused one for keyboard actions. target.name and target.text
// both read what the element says: each holds when its pattern matches the
// accessible name or the visible text. url holds when its pattern matches
// a navigate action's URL, or, for any other action, the page's URL or
// where the action leads: the link it clicks (or presses Enter on), the
// form its submit button (or Enter in a field) sends.
//
// "supervise: all" sends every action with an effect to a human
// (screenshots, waits, zooms, cursor_position and list_tabs still run at
// once); "supervise: none" sends only the provider's safety checks.
package approvals
