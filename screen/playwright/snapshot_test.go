package playwright

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ harness.Referencer = (*Display)(nil)

// TestSnapshotRefs: a Playwright display's snapshot names the page's
// elements with refs (never a password's value), as screen/cdp's does;
// clicks at the centres Locate gives reach them, the button below the
// fold scrolled into view first; a removed element's ref, one no snapshot
// gave, and every ref after a navigation are stale. Launched and
// connected.
func TestSnapshotRefs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, screentest.RefsPage)
	}))
	t.Cleanup(srv.Close)
	for _, mode := range []string{"launched", "connected"} {
		t.Run(mode, func(t *testing.T) {
			d := displayIn(t, mode)
			load(t, d, srv.URL+"/")
			snapshot := func() screen.Snapshot {
				t.Helper()
				s, err := d.Snapshot(t.Context())
				if err != nil {
					t.Fatalf("Snapshot() = %v", err)
				}
				return s
			}
			ref := func(s screen.Snapshot, line string) string {
				t.Helper()
				m := regexp.MustCompile(regexp.QuoteMeta(line) + `[^\n]*\[ref=(e\d+)\]`).FindStringSubmatch(s.Text)
				if m == nil {
					t.Fatalf("snapshot has no %q with a ref:\n%s", line, s.Text)
				}
				return m[1]
			}
			clickRef := func(r string) screen.Located {
				t.Helper()
				l, err := d.Locate(t.Context(), r)
				if err != nil {
					t.Fatalf("Locate(%s) = %v", r, err)
				}
				perform(t, d, click((l.Box.Min.X+l.Box.Max.X)/2, (l.Box.Min.Y+l.Box.Max.Y)/2))
				return l
			}

			s := snapshot()
			t.Logf("snapshot:\n%s", s.Text)
			if s.URL != srv.URL+"/" || s.Title != "Refs" || s.Refs == 0 {
				t.Errorf("Snapshot() = URL %q, title %q, %d refs; want the page's", s.URL, s.Title, s.Refs)
			}
			for _, want := range []string{`heading "Sign up" [level=1]`, `textbox "Full name" [required]`, `textbox "PIN"`, `button "Send"`} {
				if !strings.Contains(s.Text, want) {
					t.Errorf("snapshot lacks %q", want)
				}
			}
			name, pin, send, gone := ref(s, `textbox "Full name"`), ref(s, `textbox "PIN"`), ref(s, `button "Send"`), ref(s, `button "Vanish"`)

			if l := clickRef(name); l.Scrolled || l.Role != "textbox" || l.Name != "Full name" {
				t.Errorf("Locate(%s) = %+v, want the name field, in view", name, l)
			}
			perform(t, d, actions.Action{Kind: actions.Type, Text: "Ada"})
			clickRef(pin)
			perform(t, d, actions.Action{Kind: actions.Type, Text: "4711"})
			if s := snapshot(); !strings.Contains(s.Text, `textbox "Full name" [required] [ref=`+name+`]: Ada`) || strings.Contains(s.Text, "4711") {
				t.Errorf("snapshot after typing: want the name's value, and never the PIN's:\n%s", s.Text)
			}

			// Send is below the fold: scrolled into view, then clicked.
			l := clickRef(send)
			vp := DefaultViewport
			if !l.Scrolled || l.Box.Min.Y < 0 || l.Box.Max.Y > float64(vp.H) {
				t.Errorf("Locate(%s) below the fold = %+v, want it scrolled into the %v viewport", send, l, vp)
			}
			if s := snapshot(); s.Title != "sent Ada" {
				t.Errorf("title after the click on Send = %q, want %q: the page did not see it", s.Title, "sent Ada")
			}

			// Send's click scrolled Vanish out of view; Locate brings it back.
			clickRef(gone)
			for _, r := range []string{gone, "e999"} {
				if _, err := d.Locate(t.Context(), r); !errors.Is(err, screen.ErrStaleRef) {
					t.Errorf("Locate(%s) = %v, want ErrStaleRef", r, err)
				}
			}
			load(t, d, srv.URL+"/again")
			if _, err := d.Locate(t.Context(), name); !errors.Is(err, screen.ErrStaleRef) {
				t.Errorf("Locate(%s) after a navigation = %v, want ErrStaleRef", name, err)
			}
		})
	}
}

// displayIn opens a display of a launched browser, or one connected to a
// Playwright server, by mode ("launched", "connected").
func displayIn(t *testing.T, mode string) *Display {
	t.Helper()
	if mode == "connected" {
		return open(t, Config{WSEndpoint: startServer(t).endpoint})
	}
	return newDisplay(t, DisplayConfig{})
}
