package wiring

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
)

// egressOf allows page only.
func egressOf(page *isolatetest.Page) egress.Policy {
	return egress.Policy{Allow: []string{page.HostPort()}}
}

// A warm pool of containerd sandboxes: each session takes its own sandbox,
// started before it asked, whose egress proxy enforces that session's
// allowlist and no other's; a taken sandbox cannot be claimed again; the
// pool starts another after each take; closing the Sandboxes leaves no
// container and no state directory behind.
func TestWarmPool(t *testing.T) {
	socket := isolatetest.Socket(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	state := t.TempDir()
	sbx, err := NewSandboxes(ctx, SandboxConfig{Backend: isolate.Containerd, Warm: 2, Logger: isolatetest.Logger(),
		Containerd: containerd.Config{Socket: socket, Agent: os.Args[0], AgentArgs: []string{"agent"}, StateDir: state}})
	if err != nil {
		t.Fatalf("NewSandboxes() = %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			sbx.Close(context.Background())
		}
	}()
	full := func() {
		t.Helper()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, size := sbx.Warm(); n == size {
				return
			}
			select {
			case <-ctx.Done():
				n, size := sbx.Warm()
				t.Fatalf("warm pool: %d of %d ready when the test's time ran out", n, size)
			case <-tick.C:
			}
		}
	}
	full()

	blue, red := isolatetest.NewPage(t, isolatetest.Blue), isolatetest.NewPage(t, isolatetest.Red)
	type session struct {
		d   Display
		sb  *containerd.Sandbox
		dec *isolatetest.Decisions
	}
	open := func(page *isolatetest.Page) session {
		t.Helper()
		taken := metricWarmTaken.Value()
		dec := &isolatetest.Decisions{}
		d, err := OpenDisplay(ctx, DisplayRequest{Sandboxes: sbx, StartURL: page.URL + "/",
			Egress: egressOf(page), OnDecision: dec.Record, Sandbox: isolate.Config{Name: "warm-test"}})
		if err != nil {
			t.Fatalf("OpenDisplay() = %v", err)
		}
		if got := metricWarmTaken.Value() - taken; got != 1 {
			t.Errorf("OpenDisplay() took %d warm sandboxes, want 1", got)
		}
		sb, ok := d.(*BrowserDisplay).sb.(*containerd.Sandbox)
		if !ok {
			t.Fatalf("the display's sandbox is a %T, want a containerd sandbox", d.(*BrowserDisplay).sb)
		}
		return session{d: d, sb: sb, dec: dec}
	}
	a := open(blue)
	b := open(red)
	if a.sb.ID() == b.sb.ID() {
		t.Fatalf("two sessions got the same sandbox %s", a.sb.ID())
	}
	// Each session reaches its own page and is refused the other's.
	for _, c := range []struct {
		s          session
		own, other *isolatetest.Page
		colour     [3]uint8
	}{{a, blue, red, isolatetest.Blue}, {b, red, blue, isolatetest.Red}} {
		got, err := isolatetest.Visit(ctx, c.s.d, c.own.URL+"/", false)
		if err != nil || !isolatetest.Near(got, c.colour) {
			t.Errorf("sandbox %s: its own page shows %v (%v), want %v", c.s.sb.ID(), got, err, c.colour)
		}
		hits := c.other.Hits.Load()
		if got, err := isolatetest.Visit(ctx, c.s.d, c.other.URL+"/", false); err != nil || isolatetest.Near(got, isolatetest.Blue) || isolatetest.Near(got, isolatetest.Red) {
			t.Errorf("sandbox %s: the other session's page shows %v (%v), want the refusal", c.s.sb.ID(), got, err)
		}
		if c.other.Hits.Load() != hits {
			t.Errorf("sandbox %s reached the other session's page", c.s.sb.ID())
		}
		ds := c.s.dec.For(c.other.HostPort())
		if len(ds) == 0 || ds[0].Allowed {
			t.Errorf("sandbox %s: egress decisions about the other page %+v, want a refusal recorded for this session", c.s.sb.ID(), ds)
		}
	}
	// A taken sandbox serves its session only.
	if err := a.sb.Claim(ctx, isolate.Config{Egress: egressOf(red)}); err == nil || !strings.Contains(err.Error(), "already serves a session") {
		t.Errorf("Claim() of a taken sandbox = %v, want an error saying it serves a session", err)
	}
	// The pool refills.
	full()

	ids := []string{a.sb.ID(), b.sb.ID()}
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(ids, e.Name()) {
			ids = append(ids, e.Name()) // the pool's
		}
	}
	if len(ids) != 4 {
		t.Errorf("sandboxes in the state directory and sessions: %v, want 2 sessions' and 2 warm", ids)
	}
	a.d.Close(ctx)
	b.d.Close(ctx)
	if err := sbx.Close(ctx); err != nil {
		t.Errorf("Close() = %v", err)
	}
	closed = true
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("state directory after Close holds %d entries, want none", len(entries))
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "-n", containerd.DefaultNamespace, "containers", "ls", "-q").Output()
	if err != nil {
		t.Fatalf("ctr containers ls: %v", err)
	}
	for _, id := range ids {
		if slices.Contains(strings.Fields(string(out)), id) {
			t.Errorf("container %s is still there after Close", id)
		}
	}
}
