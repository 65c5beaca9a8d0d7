package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func testFrame(id string) screen.Frame {
	return screen.Frame{
		ID:       id,
		Time:     time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		URL:      "https://shop.example/",
		Viewport: screen.Size{W: 1280, H: 800},
		DPR:      2,
		Clip:     actions.Rect{Max: actions.Pt(1280, 800)},
		Capture:  screen.Size{W: 2560, H: 1600},
		Sent:     screen.Size{W: 1024, H: 640},
		Format:   screen.PNG,
		Settle:   screen.Settle{Waited: 120 * time.Millisecond},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		w, err := Create(dir)
		if err != nil {
			t.Fatalf("Create(%q) = %v", dir, err)
		}
		click := actions.Action{Kind: actions.Click, At: actions.Pt(512, 168), HasAt: true}
		given := time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)
		in := []Event{
			{Type: TypeRunStart, Task: "buy headphones", Model: "fake/model-1", Frame: testFrame("f0001"), Shot: "shots/f0001.png"},
			{Type: TypeModelTurn, Step: 1, Text: "I'll click the search box.\nThen type.", Stop: "tool_use",
				Usage: Usage{InputTokens: 1200, OutputTokens: 80, CostUSD: 0.0042}, Elapsed: 1530 * time.Millisecond},
			{Type: TypeCall, Step: 1, CallID: "toolu_01", Name: "computer", Space: screen.Grid1000,
				Raw: json.RawMessage(`{"action":"left_click","coordinate":[512,168]}`)},
			{Type: TypeAction, Step: 1, CallID: "toolu_01", Index: 1, Action: click,
				Mapped:  screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(640, 210), HasAt: true}},
				FrameID: "f0001", Stale: true, Secret: true, Elapsed: 42*time.Millisecond + 250*time.Microsecond},
			{Type: TypeResult, Step: 1, CallID: "toolu_01", Ran: 1, Notes: []string{"a new tab opened"},
				Frame: testFrame("f0002"), Shot: "shots/f0002.png", Elapsed: 2 * time.Second},
			{Type: TypeNote, Seq: 40, Time: given, Text: "given seq and time are kept"},
			{Type: TypeError, Error: "display is gone"},
			{Type: TypeRunEnd, Step: 1, Stop: "end_turn", Elapsed: 3*time.Minute + 7*time.Second},
		}
		for _, e := range in {
			if err := w.Write(e); err != nil {
				t.Fatalf("Write(%s) = %v", e.Type, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}

		got, err := Read(dir)
		if err != nil {
			t.Fatalf("Read(%q) = %v", dir, err)
		}
		now := time.Now() // synctest's clock has not moved
		want := make([]Event, len(in))
		for i, e := range in {
			e.Seq, e.Time = i+1, now
			want[i] = e
		}
		want[5].Seq, want[5].Time = 40, given
		want[6].Seq, want[7].Seq = 41, 42
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Read(%q) events (-want +got):\n%s", dir, diff)
		}
	})
}

func TestEventJSON(t *testing.T) {
	e := Event{Seq: 3, Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Type: TypeResult, Step: 2, Elapsed: 1234567 * time.Microsecond}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("json.Marshal(%+v) = %v", e, err)
	}
	want := `{"seq":3,"time":"2026-03-01T12:00:00Z","type":"result","step":2,"elapsed_ms":1234.567}`
	if string(b) != want {
		t.Errorf("json.Marshal(%+v) = %s, want %s", e, b, want)
	}

	for _, in := range []string{`{"elapsed_ms":1e300}`, `{"elapsed_ms":-1e300}`, `{"seq":"x"}`} {
		var e Event
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("json.Unmarshal(%s) = nil error, want one", in)
		}
	}
}

func TestCreateRefusesExistingTrace(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatalf("Create(%q) = %v", dir, err)
	}
	defer w.Close()
	if _, err := Create(dir); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create(%q) = %v, want fs.ErrExist", dir, err)
	}
}

func TestReadTruncated(t *testing.T) {
	line := func(seq int) string {
		return fmt.Sprintf(`{"seq":%d,"time":"2026-03-01T12:00:00Z","type":"note","text":"n%d"}`, seq, seq) + "\n"
	}
	tests := []struct {
		name     string
		data     string
		wantSeqs []int
		wantErr  error
	}{
		{name: "whole", data: line(1) + line(2), wantSeqs: []int{1, 2}},
		{name: "empty", data: ""},
		{name: "blank lines", data: "\n" + line(1) + "  \n" + line(2), wantSeqs: []int{1, 2}},
		{name: "cut mid-line", data: line(1) + line(2) + line(3)[:30], wantSeqs: []int{1, 2}, wantErr: ErrTruncated},
		{name: "cut mid-string", data: line(1) + `{"seq":2,"type":"note","text":"abc`, wantSeqs: []int{1}, wantErr: ErrTruncated},
		{name: "cut after one byte", data: line(1) + "{", wantSeqs: []int{1}, wantErr: ErrTruncated},
		{name: "only a cut line", data: `{"seq":1,"ty`, wantErr: ErrTruncated},
		{name: "cut before newline", data: line(1) + strings.TrimSuffix(line(2), "\n"), wantSeqs: []int{1, 2}},
		{name: "bad middle line", data: line(1) + "not json\n" + line(3), wantErr: ErrCorrupt},
		{name: "unknown kind", data: `{"seq":1,"type":"action","action":{"kind":"explode"}}` + "\n", wantErr: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, EventsFile), []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			evs, err := Read(dir)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Read(%q) error = %v, want %v", tt.data, err, tt.wantErr)
			}
			var seqs []int
			for _, e := range evs {
				seqs = append(seqs, e.Seq)
			}
			if diff := cmp.Diff(tt.wantSeqs, seqs); diff != "" {
				t.Errorf("Read(%q) seqs (-want +got):\n%s", tt.data, diff)
			}
			if errors.Is(err, ErrTruncated) && !strings.Contains(err.Error(), "dropped") {
				t.Errorf("Read(%q) error = %q, want it to say what was dropped", tt.data, err)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	if _, err := Read(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(empty dir) = %v, want fs.ErrNotExist", err)
	}
}

// TestConcurrentWrites checks that lines from many goroutines never
// interleave and that Seq follows file order.
func TestConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatalf("Create(%q) = %v", dir, err)
	}
	const writers, each = 8, 50
	text := strings.Repeat("0123456789abcdef", 1024) // lines larger than a pipe buffer or a page
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				errs <- w.Write(Event{Type: TypeNote, CallID: fmt.Sprintf("g%d-%d", g, i), Text: text})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Write() = %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	evs, err := Read(dir)
	if err != nil {
		t.Fatalf("Read(%q) = %v", dir, err)
	}
	if len(evs) != writers*each {
		t.Fatalf("Read(%q) returned %d events, want %d", dir, len(evs), writers*each)
	}
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Seq != i+1 {
			t.Errorf("event %d has Seq %d, want %d (file order)", i, e.Seq, i+1)
		}
		if e.Text != text {
			t.Errorf("event %d (%s) text has %d bytes, want %d", i, e.CallID, len(e.Text), len(text))
		}
		if seen[e.CallID] {
			t.Errorf("event %s written twice", e.CallID)
		}
		seen[e.CallID] = true
	}
}

// failWriter accepts the first n bytes it is given, then fails.
type failWriter struct {
	n     int
	err   error
	calls int
	buf   bytes.Buffer
}

func (f *failWriter) Write(p []byte) (int, error) {
	f.calls++
	if f.buf.Len()+len(p) <= f.n {
		return f.buf.Write(p)
	}
	k := f.n - f.buf.Len()
	f.buf.Write(p[:k])
	return k, f.err
}

func TestStickyWriteError(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "events.jsonl", Err: syscall.ENOSPC}
	e := Event{Type: TypeNote, Text: strings.Repeat("x", 100)}
	line, err := json.Marshal(Event{Seq: 1, Time: time.Unix(0, 0).UTC(), Type: TypeNote, Text: e.Text})
	if err != nil {
		t.Fatal(err)
	}
	n := len(line) + 1 // the first line fits; the second does not
	tests := []struct {
		name    string
		w       *failWriter
		wantErr error
	}{
		{name: "disk full mid-line", w: &failWriter{n: n + n/2, err: enospc}, wantErr: syscall.ENOSPC},
		{name: "disk full at line start", w: &failWriter{n: n, err: enospc}, wantErr: syscall.ENOSPC},
		{name: "short write without error", w: &failWriter{n: n + 10}, wantErr: io.ErrShortWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Create(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.out = tt.w
			w.now = func() time.Time { return time.Unix(0, 0).UTC() }
			if err := w.Write(e); err != nil {
				t.Fatalf("first Write() = %v, want nil (%d bytes fit)", err, tt.w.n)
			}
			if err := w.Write(e); !errors.Is(err, tt.wantErr) {
				t.Fatalf("second Write() = %v, want %v", err, tt.wantErr)
			}
			tt.w.n = 1 << 20 // the disk has room again
			calls := tt.w.calls
			err = w.Write(e)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Write() after a failure = %v, want the first failure (%v)", err, tt.wantErr)
			}
			if tt.w.calls != calls {
				t.Errorf("Write() after a failure wrote %d more times, want 0", tt.w.calls-calls)
			}
			if _, err := decode(tt.w.buf.Bytes(), "buffer"); err != nil && !errors.Is(err, ErrTruncated) {
				t.Errorf("decode(what was written) = %v, want nil or ErrTruncated", err)
			}
		})
	}
}

// TestWriteDiskFull writes to /dev/full, which fails every write with
// ENOSPC, as a full disk does.
func TestWriteDiskFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	w, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.out = full
	for i := range 2 {
		if err := w.Write(Event{Type: TypeNote}); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("Write() #%d to /dev/full = %v, want ENOSPC", i+1, err)
		}
	}
}

func TestWriteRefusesUnencodable(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := []Event{
		{Type: TypeCall, Raw: json.RawMessage(`{"broken`)},
		{Type: TypeAction, Action: actions.Action{Kind: actions.Kind(200), Text: "x"}},
	}
	for _, e := range bad {
		if err := w.Write(e); err == nil {
			t.Errorf("Write(%+v) = nil, want an encoding error", e)
		}
	}
	if err := w.Write(Event{Type: TypeNote, Text: "still fine"}); err != nil {
		t.Errorf("Write() after a refused event = %v, want nil", err)
	}
	w.Close()
	evs, err := Read(dir)
	if err != nil || len(evs) != 1 || evs[0].Seq != 1 {
		t.Errorf("Read() = %+v, %v; want one event with Seq 1", evs, err)
	}
}

func TestWriteAfterClose(t *testing.T) {
	w, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if err := w.Write(Event{Type: TypeNote}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write() after Close = %v, want ErrClosed", err)
	}
	if _, err := w.WriteShot(screen.Shot{Frame: testFrame("f1"), Data: pngSignature}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteShot() after Close = %v, want ErrClosed", err)
	}
}

var (
	pngSignature  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	jpegSignature = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
)

func TestWriteShot(t *testing.T) {
	frame := func(id string, f screen.Format) screen.Frame {
		fr := testFrame(id)
		fr.Format = f
		return fr
	}
	tests := []struct {
		name    string
		shot    screen.Shot
		want    string
		wantErr bool
	}{
		{name: "png", shot: screen.Shot{Frame: frame("f0001", screen.PNG), Data: pngSignature}, want: "shots/f0001.png"},
		{name: "jpeg", shot: screen.Shot{Frame: frame("f0002", screen.JPEG), Data: jpegSignature}, want: "shots/f0002.jpg"},
		{name: "sniffed", shot: screen.Shot{Frame: frame("zoom-3.a", ""), Data: jpegSignature}, want: "shots/zoom-3.a.jpg"},
		{name: "unknown data", shot: screen.Shot{Frame: frame("f3", ""), Data: []byte("GIF89a")}, wantErr: true},
		{name: "no data", shot: screen.Shot{Frame: frame("f4", screen.PNG)}, wantErr: true},
		{name: "no id", shot: screen.Shot{Frame: frame("", screen.PNG), Data: pngSignature}, wantErr: true},
		{name: "parent dir", shot: screen.Shot{Frame: frame("../evil", screen.PNG), Data: pngSignature}, wantErr: true},
		{name: "slash", shot: screen.Shot{Frame: frame("a/b", screen.PNG), Data: pngSignature}, wantErr: true},
		{name: "hidden", shot: screen.Shot{Frame: frame(".x", screen.PNG), Data: pngSignature}, wantErr: true},
		{name: "long", shot: screen.Shot{Frame: frame(strings.Repeat("a", 129), screen.PNG), Data: pngSignature}, wantErr: true},
	}
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.WriteShot(tt.shot)
			if (err != nil) != tt.wantErr {
				t.Fatalf("WriteShot(frame %q) = %q, %v; want error %v", tt.shot.Frame.ID, got, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want {
				t.Errorf("WriteShot(frame %q) = %q, want %q", tt.shot.Frame.ID, got, tt.want)
			}
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(got)))
			if err != nil || !bytes.Equal(data, tt.shot.Data) {
				t.Errorf("file %s = %q, %v; want %q", got, data, err, tt.shot.Data)
			}
		})
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ShotsDir))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"f0001.png", "f0002.jpg", "zoom-3.a.jpg"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files in shots/ (-want +got):\n%s", diff)
	}
	// A failed shot does not stop the event log.
	if err := w.Write(Event{Type: TypeNote}); err != nil {
		t.Errorf("Write() after failed WriteShot = %v, want nil", err)
	}
}
