package playwright

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// dialogPages serves pages that open dialogs on a click anywhere, and a
// page with a file input that reports what it received.
func dialogPages(t *testing.T) (*httptest.Server, chan string) {
	t.Helper()
	uploads := make(chan string, 4)
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, "<!doctype html><meta charset=utf-8><title>start</title>"+body)
		})
	}
	full := `style="display:block;width:100%;height:100vh"`
	page("/alert", `<button `+full+` onclick="alert('hello there'); document.title = 'after alert'">alert</button>`)
	page("/confirm", `<button `+full+` onclick="document.title = confirm('Delete?') ? 'yes' : 'no'">confirm</button>`)
	page("/prompt", `<button `+full+` onclick="document.title = 'got ' + prompt('Your name?', 'Bob')">prompt</button>`)
	page("/leave", `<a href="/left" `+full+`>leave</a><script>addEventListener("beforeunload", e => { e.preventDefault(); e.returnValue = ""; })</script>`)
	page("/left", `left`)
	page("/download", `<a href="/file.txt" download="report.txt" `+full+`>download</a>`)
	mux.HandleFunc("/file.txt", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret report") })
	page("/typing", `<input autofocus onkeydown="if (event.key === 'b') alert('b pressed')" `+full+`>`)
	page("/upload", `<input type=file multiple `+full+`
onchange="fetch('/got', {method: 'POST', body: Array.from(this.files).map(f => f.name + ':' + f.size).join(',')})">`)
	mux.HandleFunc("POST /got", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		uploads <- string(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, uploads
}

// capture captures d and fails t if it cannot.
func capture(t *testing.T, d *Display) screen.Shot {
	t.Helper()
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	return shot
}

// title returns the page's title; no dialog may be open.
func title(t *testing.T, d *Display) string {
	t.Helper()
	var s string
	err := d.run(t.Context(), d.cfg.CommandTimeout, func(context.Context) error {
		var err error
		s, err = d.tab().page.Title()
		return err
	})
	if err != nil {
		t.Fatalf("page title: %v", err)
	}
	return s
}

// hasEvent reports whether one of shot's events contains s.
func hasEvent(shot screen.Shot, s string) bool {
	return slices.ContainsFunc(shot.Events, func(e string) bool { return strings.Contains(e, s) })
}

// TestDialogs opens each kind of JavaScript dialog, checks that it blocks
// the page as screen/cdp's do (reported by Dialog, shown in Capture's
// notes, other actions refused), and answers it with the Dialog action.
func TestDialogs(t *testing.T) {
	srv, _ := dialogPages(t)
	tests := []struct {
		page   string
		want   screen.Dialog
		answer actions.Action
		title  string // after the answer
		url    string // after the answer
	}{
		{"/alert", screen.Dialog{Type: "alert", Message: "hello there"},
			actions.Action{Kind: actions.Dialog, Accept: true}, "after alert", "/alert"},
		{"/confirm", screen.Dialog{Type: "confirm", Message: "Delete?"},
			actions.Action{Kind: actions.Dialog, Accept: false}, "no", "/confirm"},
		{"/confirm", screen.Dialog{Type: "confirm", Message: "Delete?"},
			actions.Action{Kind: actions.Dialog, Accept: true}, "yes", "/confirm"},
		{"/prompt", screen.Dialog{Type: "prompt", Message: "Your name?", DefaultPrompt: "Bob"},
			actions.Action{Kind: actions.Dialog, Accept: true, Text: "Ada"}, "got Ada", "/prompt"},
		{"/leave", screen.Dialog{Type: "beforeunload"},
			actions.Action{Kind: actions.Dialog, Accept: true}, "start", "/left"},
	}
	d := newDisplay(t, DisplayConfig{})
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			load(t, d, srv.URL+tt.page)
			perform(t, d, click(100, 100)) // on /leave, a link to /left
			got, open := d.Dialog()
			tt.want.URL = srv.URL + tt.page
			if !open || got != tt.want {
				t.Fatalf("Dialog() = %+v, %v; want %+v, true", got, open, tt.want)
			}
			shot := capture(t, d)
			if !hasEvent(shot, "is open") || !strings.Contains(shot.Frame.Settle.Reason, "dialog") {
				t.Errorf("Capture() with the dialog open: events %q, settle %+v; want the dialog noted", shot.Events, shot.Frame.Settle)
			}
			err := d.Perform(t.Context(), screen.Mapped{Action: click(10, 10)})
			if err == nil || !strings.Contains(err.Error(), "answer it with the dialog action") {
				t.Errorf("Perform(click) with the dialog open = %v, want an error saying to answer the dialog", err)
			}
			if _, err := d.HitTest(t.Context(), actions.Pt(10, 10)); err == nil || !strings.Contains(err.Error(), "dialog") {
				t.Errorf("HitTest() with the dialog open = %v, want an error naming the dialog", err)
			}
			perform(t, d, tt.answer)
			if _, open := d.Dialog(); open {
				t.Errorf("Dialog() after the answer: still open")
			}
			shot = capture(t, d)
			if !hasEvent(shot, "was accepted") && !hasEvent(shot, "was dismissed") {
				t.Errorf("Capture() after the answer: events %q, want the answer noted", shot.Events)
			}
			if shot.Frame.URL != srv.URL+tt.url || shot.Frame.Settle.TimedOut {
				t.Errorf("Capture() after the answer: URL %q, settle %+v; want %q, settled", shot.Frame.URL, shot.Frame.Settle, srv.URL+tt.url)
			}
			if got := title(t, d); got != tt.title {
				t.Errorf("page title after the answer = %q, want %q", got, tt.title)
			}
		})
	}

	t.Run("no dialog", func(t *testing.T) {
		err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Dialog, Accept: true}})
		if err == nil || !strings.Contains(err.Error(), "no JavaScript dialog is open") {
			t.Errorf("Perform(dialog) with none open = %v", err)
		}
	})
	t.Run("text for an alert", func(t *testing.T) {
		load(t, d, srv.URL+"/alert")
		perform(t, d, click(100, 100))
		err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Dialog, Accept: true, Text: "x"}})
		if !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("Perform(dialog with text) on an alert = %v, want ErrInvalid", err)
		}
		// Close with the dialog still open: the test's cleanup checks it.
	})
}

// TestDialogWhileTyping checks that typing stops at a key that opens a
// dialog: what is left is not typed after the dialog is answered.
func TestDialogWhileTyping(t *testing.T) {
	srv, _ := dialogPages(t)
	d := newDisplay(t, DisplayConfig{})
	load(t, d, srv.URL+"/typing")
	perform(t, d, click(100, 100))
	perform(t, d, actions.Action{Kind: actions.Type, Text: "abcdef"})
	if dl, open := d.Dialog(); !open || dl.Message != "b pressed" {
		t.Fatalf("Dialog() after typing = %+v, %v; want the alert of the b key", dl, open)
	}
	perform(t, d, actions.Action{Kind: actions.Dialog, Accept: true})
	shot := capture(t, d)
	if !hasEvent(shot, "typing stopped after") {
		t.Errorf("Capture() after the answer: events %q, want a note that typing stopped", shot.Events)
	}
	var value string
	err := d.run(t.Context(), d.cfg.CommandTimeout, func(context.Context) error {
		var err error
		value, err = d.tab().page.InputValue("input")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if value != "a" && value != "ab" {
		t.Errorf("the field holds %q after the dialog was answered, want a or ab: nothing typed after the dialog", value)
	}
}

// TestDismissDialogs checks Config.DismissDialogs: a dialog is dismissed
// as it opens, and the next capture says so.
func TestDismissDialogs(t *testing.T) {
	srv, _ := dialogPages(t)
	d := open(t, Config{DismissDialogs: true})
	load(t, d, srv.URL+"/confirm")
	perform(t, d, click(100, 100))
	if dl, open := d.Dialog(); open {
		t.Errorf("Dialog() = %+v, true; want none open", dl)
	}
	shot := capture(t, d)
	if want := `a JavaScript confirm dialog ("Delete?") opened and was dismissed automatically.`; !slices.Contains(shot.Events, want) {
		t.Errorf("Capture() events = %q, want %q", shot.Events, want)
	}
	if got := title(t, d); got != "no" {
		t.Errorf("page title = %q, want no (the confirm was dismissed)", got)
	}
}

// TestUpload answers a file chooser with the Upload action, on a launched
// and a connected display (which sends the files' bytes to the server).
func TestUpload(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"a.txt": 3, "b.bin": 1000} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"launched", "connected"} {
		t.Run(mode, func(t *testing.T) {
			cfg := Config{UploadDir: dir}
			if mode == "connected" {
				cfg.WSEndpoint = startServer(t).endpoint
			}
			d := open(t, cfg)
			srv, uploads := dialogPages(t)
			load(t, d, srv.URL+"/upload")
			upload := func(files ...string) error {
				return d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Upload, Files: files}})
			}
			if err := upload("a.txt"); err == nil || !strings.Contains(err.Error(), "no file chooser is open") {
				t.Errorf("Perform(upload) before a chooser opened = %v", err)
			}
			perform(t, d, click(100, 100))
			if shot := capture(t, d); !hasEvent(shot, "A file chooser is open (one or more files)") {
				t.Errorf("Capture() after the click: events %q, want the chooser noted", shot.Events)
			}
			for _, bad := range []string{"missing.txt", "sub"} {
				if err := upload(bad); err == nil || !strings.Contains(err.Error(), bad) {
					t.Errorf("Perform(upload %s) = %v, want an error naming it", bad, err)
				}
			}
			if err := upload("a.txt", filepath.Join(dir, "b.bin")); err != nil {
				t.Fatalf("Perform(upload) = %v", err)
			}
			select {
			case got := <-uploads:
				if got != "a.txt:3,b.bin:1000" {
					t.Errorf("the page received %q, want a.txt:3,b.bin:1000", got)
				}
			case <-t.Context().Done():
				t.Fatal("the page received no files")
			}
			if shot := capture(t, d); !hasEvent(shot, "The page's file input now holds a.txt (3 bytes), b.bin (1000 bytes).") {
				t.Errorf("Capture() after the upload: events %q", shot.Events)
			}
		})
	}
}

// TestDownloadRefused checks that a download is refused with a note, as on
// a screen/cdp display that keeps no downloads.
func TestDownloadRefused(t *testing.T) {
	srv, _ := dialogPages(t)
	d := newDisplay(t, DisplayConfig{})
	load(t, d, srv.URL+"/download")
	perform(t, d, click(100, 100))
	want := fmt.Sprintf("A download of report.txt (%s/file.txt) was refused: this display keeps no downloads.", srv.URL)
	shot := capture(t, d)
	if !slices.Contains(shot.Events, want) {
		t.Errorf("Capture() after a click on a download link: events %q, want %q", shot.Events, want)
	}
	if shot.Frame.URL != srv.URL+"/download" {
		t.Errorf("Frame.URL after the download = %q, want the page unchanged", shot.Frame.URL)
	}
}

// TestUnsupportedKinds checks that what this display does not do fails
// with screen.ErrUnsupported and words that say why.
func TestUnsupportedKinds(t *testing.T) {
	d := newDisplayValue(DisplayConfig{CommandTimeout: DefaultCommandTimeout}, &Browser{})
	for _, tt := range []struct {
		a    actions.Action
		want string
	}{
		{actions.Action{Kind: actions.Zoom}, "the harness's own business"},
		{actions.Action{Kind: actions.Wait}, "the harness's own business"},
	} {
		err := d.Perform(t.Context(), screen.Mapped{Action: tt.a})
		if !errors.Is(err, screen.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Perform(%s) = %v, want ErrUnsupported saying %q", tt.a.Kind, err, tt.want)
		}
	}
}
