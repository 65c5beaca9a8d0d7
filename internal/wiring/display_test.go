package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/local"
	"github.com/spotter-harness/spotter/screen"
)

// fakeInner is a display that shows url until it dies.
type fakeInner struct {
	url    string
	dead   error // returned by every call once set
	closed bool
}

func (f *fakeInner) Capture(context.Context, screen.CaptureOptions) (screen.Shot, error) {
	if f.dead != nil {
		return screen.Shot{}, f.dead
	}
	return screen.Shot{Frame: screen.Frame{URL: f.url}}, nil
}

func (f *fakeInner) Perform(_ context.Context, m screen.Mapped) error {
	if f.dead != nil {
		return f.dead
	}
	if m.Kind == actions.Navigate {
		f.url = m.URL
	}
	return nil
}

func (f *fakeInner) Close(context.Context) error { f.closed = true; return nil }

var errOOM = fmt.Errorf("capture: the browser exited: %w (%w)", screen.ErrGone,
	errors.Join(isolate.ErrOOM, isolate.ErrDead, errors.New("sandbox spotter-1 was killed: out of memory (limit 400 MiB)")))

func TestOpenedDisplayRestarts(t *testing.T) {
	var started []*fakeInner
	start := func(context.Context, DisplayRequest) (inner, isolate.Sandbox, error) {
		f := &fakeInner{url: "about:blank"}
		started = append(started, f)
		return f, nil, nil
	}
	var notes []string
	ctx := t.Context()
	d, err := openDisplay(ctx, DisplayRequest{StartURL: "http://start.test/", OnNote: func(s string) { notes = append(notes, s) },
		Logger: slog.New(slog.DiscardHandler)}, start)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if started[0].url != "http://start.test/" {
		t.Fatalf("first display at %q, want the start URL", started[0].url)
	}
	nav := func(u string) error {
		return d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: u}})
	}
	if err := nav("http://hog.test/"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Capture(ctx, screen.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}

	// A Perform on a dead display: an error for the model that is not
	// ErrGone, and a fresh display at the last URL seen.
	started[0].dead = errOOM
	err = d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, HasAt: true}})
	if err == nil || errors.Is(err, screen.ErrGone) || !errors.Is(err, isolate.ErrOOM) || !errors.Is(err, isolate.ErrDead) ||
		!strings.Contains(err.Error(), "sandbox spotter-1 was killed: out of memory (limit 400 MiB)") {
		t.Errorf("Perform on a dead display = %v, want ErrOOM and ErrDead, not ErrGone, saying why", err)
	}
	if len(started) != 2 || !started[0].closed || started[1].url != "http://hog.test/" {
		t.Fatalf("after the first death: %d displays, first closed %v, second at %q; want a second at the last URL", len(started), started[0].closed, started[1].url)
	}

	// A second death at the same URL: the restart goes to the start URL,
	// and Capture returns the fresh display's screenshot with a note.
	started[1].dead = errOOM
	shot, err := d.Capture(ctx, screen.CaptureOptions{})
	if err != nil || len(shot.Events) != 1 || !strings.Contains(shot.Events[0], "started anew at http://start.test/") {
		t.Errorf("Capture on a dead display = %q, %v; want a screenshot noting the restart at the start URL", shot.Events, err)
	}
	if got := d.Restarts(); len(got) != 2 || len(notes) != 2 {
		t.Errorf("restarts %q, notes %q; want two of each", got, notes)
	}

	// Past MaxRestarts (2) the error stays ErrGone, and the run ends.
	started[2].dead = errOOM
	if _, err := d.Capture(ctx, screen.CaptureOptions{}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Capture after too many restarts = %v, want ErrGone", err)
	}
	if len(started) != 3 {
		t.Errorf("%d displays started, want no fourth", len(started))
	}
	if err := d.Perform(ctx, screen.Mapped{}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform after the end = %v, want ErrGone", err)
	}
}

func TestOpenedDisplayKeepsOtherErrors(t *testing.T) {
	f := &fakeInner{}
	d, err := openDisplay(t.Context(), DisplayRequest{Logger: slog.New(slog.DiscardHandler)},
		func(context.Context, DisplayRequest) (inner, isolate.Sandbox, error) { return f, nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	bad := errors.New("out of the image")
	f.dead = bad
	if err := d.Perform(t.Context(), screen.Mapped{}); err != bad {
		t.Errorf("Perform = %v, want the display's own error unchanged", err)
	}
	if d.Restarts() != nil {
		t.Errorf("restarted on an error that is not a death")
	}
}

func TestEgressFor(t *testing.T) {
	p := EgressFor([]string{"example.com"}, "http://127.0.0.1:8080/app")
	if strings.Join(p.Allow, ",") != "example.com,127.0.0.1:8080" {
		t.Errorf("EgressFor = %v, want the hosts and the start URL's host", p.Allow)
	}
	if p := EgressFor(nil, "about:blank"); len(p.Allow) != 0 {
		t.Errorf("EgressFor(about:blank) = %v, want nothing", p.Allow)
	}
	// A demo task's hosts already name the start URL's (DemoHosts): once.
	if p := EgressFor([]string{"127.0.0.1:8080"}, "http://127.0.0.1:8080/"); strings.Join(p.Allow, ",") != "127.0.0.1:8080" {
		t.Errorf("EgressFor = %v, want the start URL's host once", p.Allow)
	}
}

// sandboxStub is a sandbox of a backend other than local (containerd's
// place), for what a restart says.
type sandboxStub struct{ isolate.Sandbox }

func (sandboxStub) Close(context.Context) error { return nil }

// A display that dies is named for the model by what died: its sandbox
// when it had one of its own, the browser when it ran on the host, with or
// without a local sandbox (only the session's egress proxy, in this
// process).
func TestRestartNamesWhatDied(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name string
		sb   func(t *testing.T) isolate.Sandbox
		want string
	}{
		{"no sandbox", func(*testing.T) isolate.Sandbox { return nil }, "The browser died"},
		{"local", func(t *testing.T) isolate.Sandbox {
			sb, err := local.Start(ctx, isolate.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sb.Close(context.Background()) })
			return sb
		}, "The browser died"},
		{"a sandbox of its own", func(*testing.T) isolate.Sandbox { return sandboxStub{} }, "The sandbox died"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var started []*fakeInner
			start := func(context.Context, DisplayRequest) (inner, isolate.Sandbox, error) {
				f := &fakeInner{url: "about:blank"}
				started = append(started, f)
				return f, c.sb(t), nil
			}
			d, err := openDisplay(ctx, DisplayRequest{StartURL: "http://start.test/", MaxRestarts: 1,
				Display: DisplaySpec{Backend: "chromium"}, Logger: slog.New(slog.DiscardHandler)}, start)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close(ctx)
			started[0].dead = fmt.Errorf("click: the browser exited: %w", screen.ErrGone)
			err = d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, HasAt: true}})
			if err == nil || !strings.Contains(err.Error(), c.want+" (") {
				t.Errorf("Perform on a dead display = %v, want %q", err, c.want)
			}
		})
	}
}
