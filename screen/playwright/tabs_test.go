package playwright

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// TestTabs follows tabs that pages open and close, and lists, switches and
// closes them with the tab actions, as screen/cdp's display does.
func TestTabs(t *testing.T) {
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<!doctype html><meta charset=utf-8><style>*{margin:0}</style>"+body)
		})
	}
	full := `style="display:block;width:100%;height:100vh"`
	page("/opener", `<a href="/second" target=_blank `+full+`>open</a>`)
	page("/second", `<button `+full+` onclick="window.open('/closer')">popup</button>`)
	page("/closer", `<button `+full+` onclick="window.close()">close me</button>`)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	d := newDisplay(t, DisplayConfig{})
	load(t, d, srv.URL+"/opener")
	// expect captures d and checks its URL and that a note contains each
	// of notes.
	expect := func(step, url string, notes ...string) {
		t.Helper()
		shot := capture(t, d)
		if shot.Frame.URL != srv.URL+url && shot.Frame.URL != url || shot.Frame.Settle.TimedOut {
			t.Errorf("%s: Frame.URL %q, settle %+v; want %s, settled", step, shot.Frame.URL, shot.Frame.Settle, url)
		}
		for _, n := range notes {
			if !hasEvent(shot, n) {
				t.Errorf("%s: events %q, want one containing %q", step, shot.Events, n)
			}
		}
	}
	tabAction := func(k actions.Kind, i int) error {
		return d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: k, Tab: i}})
	}

	perform(t, d, click(100, 100)) // target=_blank
	expect("a link to a new tab", "/second", "A new tab opened and is now the active tab (tab 1).",
		fmt.Sprintf("[0] %s/opener; [1] %s/second (active)", srv.URL, srv.URL))
	if got, err := d.HitTest(t.Context(), actions.Pt(100, 100)); err != nil || got.Name != "popup" {
		t.Errorf("HitTest() on the new tab = %+v, %v; want its button", got, err)
	}

	perform(t, d, click(100, 100)) // window.open
	expect("window.open", "/closer", "A new tab opened and is now the active tab (tab 2).")
	perform(t, d, click(100, 100)) // window.close
	expect("window.close", "/second", fmt.Sprintf("The active tab (%s/closer) was closed by its page.", srv.URL),
		fmt.Sprintf("[0] %s/opener; [1] %s/second (active)", srv.URL, srv.URL))

	if err := tabAction(actions.ListTabs, 0); err != nil {
		t.Fatalf("Perform(list_tabs) = %v", err)
	}
	expect("list_tabs", "/second", "Open tabs (switch_tab and close_tab take the number): [0]")
	if err := tabAction(actions.SwitchTab, 0); err != nil {
		t.Fatalf("Perform(switch_tab 0) = %v", err)
	}
	expect("switch_tab 0", "/opener", fmt.Sprintf("[0] %s/opener (active); [1]", srv.URL))
	if err := tabAction(actions.SwitchTab, 5); !errors.Is(err, actions.ErrInvalid) || !strings.Contains(err.Error(), "there are 2 tabs") {
		t.Errorf("Perform(switch_tab 5) = %v, want ErrInvalid saying there are 2 tabs", err)
	}
	if err := tabAction(actions.CloseTab, 0); err != nil {
		t.Fatalf("Perform(close_tab 0) = %v", err)
	}
	expect("close_tab 0 (the active one)", "/second", fmt.Sprintf("[0] %s/second (active)", srv.URL))
	if err := tabAction(actions.CloseTab, 0); err != nil {
		t.Fatalf("Perform(close_tab 0), the last tab = %v", err)
	}
	expect("close_tab of the last tab", "about:blank", "No tab was left open, so a blank tab was opened.")
	load(t, d, srv.URL+"/opener") // the blank tab works
}
