package cdp

import (
	"image"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// shoot takes a full-size screenshot, failing t on an error.
func shoot(t testing.TB, d *Display) screen.Shot {
	t.Helper()
	start := time.Now()
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	t.Logf("capture %s in %v: settle %+v", shot.Frame.ID, time.Since(start).Round(time.Millisecond), shot.Frame.Settle)
	return shot
}

// hasNote reports whether a note of shot contains s.
func hasNote(shot screen.Shot, s string) bool {
	return slices.ContainsFunc(shot.Events, func(e string) bool { return strings.Contains(e, s) })
}

func title(t testing.TB, d *Display) string {
	t.Helper()
	return eval[string](t, d, "document.title")
}

func TestDialogs(t *testing.T) {
	d := newDisplay(t, DisplayConfig{CommandTimeout: 3 * time.Second})
	load(t, d, "dialogs.html")

	// An alert: the click succeeds, the capture does not wait, and the
	// notes describe the dialog until the model answers it.
	do(t, d, kind(actions.Click, at(100, 50)))
	start := time.Now()
	shot := shoot(t, d)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Capture() with an alert open took %v", took)
	}
	if !hasNote(shot, `JavaScript alert dialog ("Saved!") is open`) {
		t.Errorf("Capture() with an alert open: events %q, want the dialog", shot.Events)
	}
	if dl, ok := d.Dialog(); !ok || dl.Type != "alert" || dl.Message != "Saved!" {
		t.Errorf("Dialog() = %+v, %v; want the alert", dl, ok)
	}
	err := d.Perform(t.Context(), screen.Mapped{Action: kind(actions.Click, at(100, 130))})
	if err == nil || !strings.Contains(err.Error(), "answer it with the dialog action") {
		t.Errorf("Perform(click) with an alert open = %v, want an error naming the dialog", err)
	}
	do(t, d, actions.Action{Kind: actions.Dialog, Accept: true})
	shot = shoot(t, d)
	if _, ok := d.Dialog(); ok || !hasNote(shot, "was accepted") {
		t.Errorf("after accepting: Dialog() open = %v, events %q", ok, shot.Events)
	}
	if got := title(t, d); got != "alerted" {
		t.Errorf("title after the alert = %q, want alerted", got)
	}

	for _, tt := range []struct {
		at   actions.Point
		a    actions.Action
		want string
	}{
		{actions.Pt(100, 130), actions.Action{Kind: actions.Dialog, Accept: true}, "confirmed"},
		{actions.Pt(100, 130), actions.Action{Kind: actions.Dialog}, "kept"},
		{actions.Pt(100, 210), actions.Action{Kind: actions.Dialog, Accept: true, Text: "Ada"}, "name:Ada"},
		{actions.Pt(100, 210), actions.Action{Kind: actions.Dialog}, "no name"},
	} {
		do(t, d, kind(actions.Click, at(tt.at.X, tt.at.Y)))
		shoot(t, d)
		do(t, d, tt.a)
		shoot(t, d)
		if got := title(t, d); got != tt.want {
			t.Errorf("answer %+v: title = %q, want %q", tt.a, got, tt.want)
		}
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Dialog}}); err == nil {
		t.Errorf("Perform(dialog) with none open = nil, want an error")
	}
}

func TestDialogsDismissed(t *testing.T) {
	d := newDisplay(t, DisplayConfig{DismissDialogs: true})
	load(t, d, "dialogs.html")
	do(t, d, kind(actions.Click, at(100, 130)))
	shot := shoot(t, d)
	if !hasNote(shot, `confirm dialog ("Delete it?") opened and was dismissed automatically`) {
		t.Errorf("events %q, want the dismissal", shot.Events)
	}
	if got := title(t, d); got != "kept" {
		t.Errorf("title = %q, want kept", got)
	}
}

func TestTabs(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "popup.html")

	do(t, d, kind(actions.Click, at(100, 50))) // target=_blank
	shot := shoot(t, d)
	if !strings.HasSuffix(shot.Frame.URL, "/static.html") || !hasNote(shot, "A new tab opened") || !hasNote(shot, "[1] static") {
		t.Fatalf("after a target=_blank click: URL %s, events %q", shot.Frame.URL, shot.Events)
	}
	// The new tab's content is in the screenshot: static.html's heading is
	// dark text on white where popup.html has none.
	if dark := darkPixels(decode(t, shot), image.Rect(40, 40, 300, 80)); dark < 50 {
		t.Errorf("the new tab's heading has %d dark pixels in the screenshot, want many", dark)
	}

	do(t, d, actions.Action{Kind: actions.SwitchTab})
	shot = shoot(t, d)
	if !strings.HasSuffix(shot.Frame.URL, "/popup.html") || !hasNote(shot, "[0] opener") {
		t.Fatalf("after switch_tab 0: URL %s, events %q", shot.Frame.URL, shot.Events)
	}
	do(t, d, kind(actions.Click, at(100, 130))) // window.open
	shot = shoot(t, d)
	if !strings.HasSuffix(shot.Frame.URL, "/a.html") || !hasNote(shot, "[2]") {
		t.Fatalf("after window.open: URL %s, events %q", shot.Frame.URL, shot.Events)
	}
	do(t, d, actions.Action{Kind: actions.ListTabs})
	shot = shoot(t, d)
	if !hasNote(shot, "[2] ") || !hasNote(shot, "(active)") {
		t.Errorf("list_tabs: events %q", shot.Events)
	}
	for range 3 {
		do(t, d, actions.Action{Kind: actions.CloseTab})
	}
	shot = shoot(t, d)
	if shot.Frame.URL != "about:blank" || !hasNote(shot, "a blank tab was opened") {
		t.Errorf("after closing every tab: URL %s, events %q", shot.Frame.URL, shot.Events)
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.SwitchTab, Tab: 5}}); err == nil {
		t.Errorf("Perform(switch_tab 5) of 1 tab = nil, want an error")
	}
	// A page that closes itself leaves the tab before it active.
	load(t, d, "popup.html")
	do(t, d, kind(actions.Click, at(100, 130)))
	shoot(t, d)
	eval[int](t, d, "window.close(), 1")
	shot = shoot(t, d)
	if !strings.HasSuffix(shot.Frame.URL, "/popup.html") || !hasNote(shot, "closed by its page") {
		t.Errorf("after window.close(): URL %s, events %q", shot.Frame.URL, shot.Events)
	}
	// A page that closes itself on the press of a click: the release finds
	// the tab gone, and the click was still delivered, not a dead display.
	do(t, d, kind(actions.Click, at(100, 130)))
	shoot(t, d)
	eval[int](t, d, `addEventListener("mousedown", () => window.close()), 1`)
	do(t, d, kind(actions.Click, at(100, 50)))
	shot = shoot(t, d)
	if !strings.HasSuffix(shot.Frame.URL, "/popup.html") || !hasNote(shot, "closed by its page") {
		t.Errorf("after a click that closed its tab: URL %s, events %q", shot.Frame.URL, shot.Events)
	}
}

// darkPixels counts the pixels of r in img darker than mid-grey.
func darkPixels(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if (cr+cg+cb)/3>>8 < 128 {
				n++
			}
		}
	}
	return n
}

func TestSelectMenu(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "select.html")
	below := image.Rect(40, 76, 280, 170) // where the four options show, 24 px each
	if dark := darkPixels(decode(t, shoot(t, d)), below); dark != 0 {
		t.Fatalf("%d dark pixels below the closed select, want 0", dark)
	}
	do(t, d, kind(actions.Click, at(160, 56)))
	shot := shoot(t, d)
	if dark := darkPixels(decode(t, shot), below); dark < 100 {
		t.Errorf("%d dark pixels below the open select, want its options", dark)
	}
	// The third option, Blue, is the third row below the select.
	do(t, d, kind(actions.Click, at(100, 72+2*24+12)))
	shoot(t, d)
	if got := title(t, d); got != "chose:blue" {
		t.Errorf("title after choosing = %q, want chose:blue", got)
	}
	if n := eval[int](t, d, "window.inputs"); n != 1 {
		t.Errorf("input events = %d, want 1", n)
	}
	if dark := darkPixels(decode(t, shoot(t, d)), below); dark != 0 {
		t.Errorf("%d dark pixels below the select after choosing, want 0 (menu closed)", dark)
	}
}

func TestUpload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello upload\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDisplay(t, DisplayConfig{UploadDir: dir})
	for _, page := range []string{"upload.html", "upload.html?reset"} {
		load(t, d, page)
		if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Upload, Files: []string{"hello.txt"}}}); err == nil {
			t.Errorf("%s: Perform(upload) with no chooser open = nil, want an error", page)
		}
		do(t, d, kind(actions.Click, at(100, 40)))
		shot := shoot(t, d)
		if !hasNote(shot, "A file chooser is open") {
			t.Fatalf("%s: events %q, want the file chooser", page, shot.Events)
		}
		err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Upload, Files: []string{"missing.txt"}}})
		if err == nil || !strings.Contains(err.Error(), `file "missing.txt" not found`) {
			t.Errorf("%s: Perform(upload missing.txt) = %v, want not found", page, err)
		}
		do(t, d, actions.Action{Kind: actions.Upload, Files: []string{"hello.txt"}})
		// The note says what the page's input received, even when the
		// page empties it at once.
		if shot := shoot(t, d); !hasNote(shot, "The page's file input now holds hello.txt (13 bytes).") {
			t.Errorf("%s: events after the upload %q, want what the input received", page, shot.Events)
		}
		if got := title(t, d); got != "got:hello.txt:hello upload" {
			t.Errorf("%s: title after the upload = %q", page, got)
		}
	}
}

func TestDownloads(t *testing.T) {
	dir := t.TempDir()
	d := newDisplay(t, DisplayConfig{DownloadDir: dir, MaxDownloads: 2, MaxDownloadBytes: 1000})
	load(t, d, "static.html")
	get := func(name string, n int) screen.Shot {
		t.Helper()
		eval[int](t, d, `(() => { const a = document.createElement("a"); a.href = "/download?name=`+name+`&n=`+
			itoa(n)+`"; a.download = ""; document.body.append(a); a.click(); return 1 })()`)
		// The download's end arrives on its own: wait for its note.
		deadline := time.Now().Add(5 * time.Second)
		var all screen.Shot
		for time.Now().Before(deadline) {
			shot := shoot(t, d)
			all.Events = append(all.Events, shot.Events...)
			if hasNote(all, name) {
				return all
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no note about %s within 5s: %q", name, all.Events)
		return all
	}
	if shot := get("a.txt", 10); !hasNote(shot, "Downloaded a.txt (10 bytes)") {
		t.Errorf("events %q, want the download", shot.Events)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "xxxxxxxxxx" {
		t.Errorf("downloaded a.txt = %q, %v", b, err)
	}
	if shot := get("big.bin", 5000); !hasNote(shot, "larger than this session's limit of 1000 bytes") {
		t.Errorf("events %q, want the size limit", shot.Events)
	}
	if shot := get("c.txt", 5); !hasNote(shot, "at most 2 downloads") {
		t.Errorf("events %q, want the count limit", shot.Events)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil {
		t.Errorf("c.txt was saved beyond the limit")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestHTML5Drop(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "dnd.html")
	do(t, d, actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(95, 95), actions.Pt(300, 100), actions.Pt(475, 95)}})
	shoot(t, d)
	if got := title(t, d); got != "dropped:payload-1" {
		t.Errorf("title after the drag = %q (log %q), want dropped:payload-1", got, eval[[]string](t, d, "log"))
	}
}

func TestPageZoom(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	for range 3 {
		do(t, d, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "+"}})
	}
	shot := shoot(t, d)
	if shot.Frame.Zoom != 1.5 || !hasNote(shot, "zoom is now 150%") {
		t.Fatalf("after three ctrl+plus: Frame.Zoom = %g, events %q; want 1.5", shot.Frame.Zoom, shot.Events)
	}
	if dpr := eval[float64](t, d, "devicePixelRatio"); dpr != 1.5 {
		t.Errorf("devicePixelRatio at 150%% = %g, want 1.5", dpr)
	}
	takeEvents(t, d)
	do(t, d, kind(actions.Click, at(600, 300)))
	got := only(takeEvents(t, d), "click")
	if len(got) != 1 || abs(int(got[0].X)-400) > 1 || abs(int(got[0].Y)-200) > 1 {
		t.Errorf("click at viewport (600, 300) at 150%%: page saw %+v, want CSS (400, 200)", got)
	}
	do(t, d, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "0"}})
	if shot := shoot(t, d); shot.Frame.Zoom != 1 {
		t.Errorf("after ctrl+0: Frame.Zoom = %g, want 1", shot.Frame.Zoom)
	}
}
