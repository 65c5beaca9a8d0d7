package screen

// Target describes what lies under a point of a display: for a browser, the
// element a click there would reach (inside iframes too), as approval rules
// need it. Displays without a DOM have none. It is plain data.
type Target struct {
	Tag          string `json:"tag,omitempty"`          // lower-case element name: "button", "input", "a"
	Role         string `json:"role,omitempty"`         // ARIA role, explicit or implicit: "button", "link", "textbox"
	Name         string `json:"name,omitempty"`         // accessible name (label, text, aria-label, title, value of a button)
	InputType    string `json:"inputType,omitempty"`    // <input type>: "password", "submit", "file", ...
	Autocomplete string `json:"autocomplete,omitempty"` // autocomplete attribute: "cc-number", "current-password", ...
	Editable     bool   `json:"editable,omitempty"`     // text can be typed into it
	FormAction   string `json:"formAction,omitempty"`   // absolute URL of the enclosing form's action
	FormMethod   string `json:"formMethod,omitempty"`   // "get" or "post"
	Href         string `json:"href,omitempty"`         // absolute URL of the enclosing link
	LinkTarget   string `json:"linkTarget,omitempty"`   // the link's target attribute ("_blank")
	Download     bool   `json:"download,omitempty"`     // the link has a download attribute
	FrameURL     string `json:"frameUrl,omitempty"`     // the URL of the (i)frame holding the element; "" for the top page
	Text         string `json:"text,omitempty"`         // visible text, clipped to 200 characters
	// Acts says that clicking the element does something: it is a
	// control (a link, a button, a form field, a label of one, an element
	// with a widget role or contenteditable), or it or the ancestor
	// described has a handler for clicks (in its markup or added by a
	// script) or a pointer cursor of its own. Static text does not act.
	Acts bool `json:"acts,omitempty"`
	// FormSubmit is the label of the button that submitting the
	// element's form by Enter presses (its first submit button).
	FormSubmit string `json:"formSubmit,omitempty"`
}

// Dialog is a JavaScript dialog a page has open.
type Dialog struct {
	Type          string `json:"type"` // "alert", "confirm", "prompt" or "beforeunload"
	Message       string `json:"message"`
	DefaultPrompt string `json:"defaultPrompt,omitempty"`
	URL           string `json:"url,omitempty"` // the page that opened it
}
