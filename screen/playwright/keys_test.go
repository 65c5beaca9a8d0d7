package playwright

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

const keysPage = `<!doctype html>
<textarea id="t" autofocus></textarea>
<script>
window.keys = [];
for (const type of ["keydown", "keyup"]) {
  window.addEventListener(type, e => {
    keys.push({type: e.type, key: e.key, code: e.code, location: e.location, shift: e.shiftKey});
    if (e.target.id !== "t") e.preventDefault();
  }, true);
}
</script>`

// allKeys returns every canonical key: the named ones, the function keys,
// the keypad's and every printable ASCII character.
func allKeys() []actions.Key {
	ks := []actions.Key{actions.Control, actions.Alt, actions.Shift, actions.Meta,
		"Enter", "Tab", "Space", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
		"PageUp", "PageDown", "Home", "End", "Insert", "CapsLock", "NumLock", "ScrollLock", "Pause", "ContextMenu",
		"PrintScreen", "AudioVolumeMute", "AudioVolumeDown", "AudioVolumeUp", "MediaTrackNext", "MediaTrackPrevious",
		"MediaStop", "MediaPlayPause", "NumpadAdd", "NumpadSubtract", "NumpadMultiply", "NumpadDivide",
		"NumpadDecimal", "NumpadEnter"}
	for n := 1; n <= 24; n++ {
		ks = append(ks, actions.Key(fmt.Sprint("F", n)))
	}
	for d := range 10 {
		ks = append(ks, actions.Key(fmt.Sprint("Numpad", d)))
	}
	for r := '!'; r <= '~'; r++ {
		ks = append(ks, actions.Key(r))
	}
	return ks
}

// TestEveryKey presses every canonical key and checks that the page sees
// the DOM key, code and location of actions.LookupKey, on keydown and keyup,
// or that Perform says the key is unsupported.
func TestEveryKey(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, keysPage)
	}))
	defer srv.Close()
	perform(t, d, actions.Action{Kind: actions.Navigate, URL: srv.URL})
	if _, err := d.Capture(t.Context(), screen.CaptureOptions{}); err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	type key struct {
		Type     string `json:"type"`
		Key      string `json:"key"`
		Code     string `json:"code"`
		Location int    `json:"location"`
		Shift    bool   `json:"shift"`
	}
	unsupported := 0
	for _, k := range allKeys() {
		info, ok := actions.LookupKey(k)
		if !ok {
			t.Fatalf("actions.LookupKey(%q) = false", k)
		}
		err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Keypress, Keys: actions.Chord{k}}})
		if _, listed := unsupportedKeys[k]; listed {
			unsupported++
			if !errors.Is(err, screen.ErrUnsupported) {
				t.Errorf("Perform(keypress %s) = %v, want an error wrapping ErrUnsupported", k, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Perform(keypress %s) = %v", k, err)
			continue
		}
		res, err := d.tab().page.Evaluate("keys.splice(0)")
		if err != nil {
			t.Fatalf("read the page's key events: %v", err)
		}
		b, _ := json.Marshal(res)
		var got []key
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("decode the page's key events %s: %v", b, err)
		}
		shift := info.Shift || k == actions.Shift
		want := []key{
			{"keydown", info.DOMKey, info.Code, info.Location, shift},
			{"keyup", info.DOMKey, info.Code, info.Location, info.Shift},
		}
		if info.Shift { // Shift is pressed around the key
			want = append(append([]key{{"keydown", "Shift", "ShiftLeft", 1, true}}, want...), key{"keyup", "Shift", "ShiftLeft", 1, false})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Perform(keypress %s): key events (-want +got):\n%s", k, diff)
		}
	}
	if unsupported != len(unsupportedKeys) {
		t.Errorf("%d keys were unsupported, but unsupportedKeys lists %d: a key of the list is not canonical", unsupported, len(unsupportedKeys))
	}

	// Every printable ASCII character types itself.
	var text []rune
	for r := ' '; r <= '~'; r++ {
		text = append(text, r)
	}
	if _, err := d.tab().page.Evaluate(`(t => { t.value = ""; t.focus(); })(document.getElementById("t"))`); err != nil {
		t.Fatalf("focus the text area: %v", err)
	}
	perform(t, d, actions.Action{Kind: actions.Type, Text: string(text) + "\nnext line"})
	got, err := d.tab().page.Evaluate(`document.getElementById("t").value`)
	if err != nil {
		t.Fatalf("read the text area: %v", err)
	}
	if want := string(text) + "\nnext line"; got != want {
		t.Errorf("Perform(type %q): the text area holds %q", want, got)
	}
}

func perform(t testing.TB, d *Display, a actions.Action) {
	t.Helper()
	if err := d.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
		t.Fatalf("Perform(%v) = %v", a.Kind, err)
	}
}
