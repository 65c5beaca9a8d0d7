package harness_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// TestDiskFullStopsTheRunCleanly writes a trace onto a tiny tmpfs until it
// fills: the run must stop with a trace error, and what was written must
// still read back whole. It mounts a filesystem, so it needs root and runs
// with the integration tests.
func TestDiskFullStopsTheRunCleanly(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs the tests that mount filesystems")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=96k"); err != nil {
		t.Fatalf("mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })

	var turns []harness.Turn
	for i := range 400 { // far more than 96 KiB of trace can hold
		turns = append(turns, harness.Turn{Stop: harness.StopToolUse, Text: strings.Repeat("thinking ", 20), Calls: []harness.Call{
			{ID: "c", Name: "computer", Actions: []actions.Action{click(float64(1+i%500), 3)}}}})
	}
	tw, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &turnsModel{turns: turns}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: &screentest.Fake{}, Policy: permissive,
		Trace: tw, MaxSteps: 1000})
	_ = tw.Close() // may fail too: the disk is full
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != harness.StopError || !strings.Contains(out.Err, "trace") {
		t.Fatalf("outcome = %+v, want a stop on the trace error", out)
	}
	if len(m.turns) == 0 {
		t.Fatalf("the run used every turn; the disk never filled")
	}
	events, err := trace.Read(dir)
	if err != nil {
		t.Fatalf("the trace written before the disk filled does not read back: %v", err)
	}
	if len(events) < 3 || events[0].Type != trace.TypeRunStart {
		t.Fatalf("read %d events, first %v", len(events), events[0].Type)
	}
	for i, e := range events {
		if e.Seq != events[0].Seq+i {
			t.Fatalf("event %d has seq %d: a hole or a half-written event", i, e.Seq)
		}
	}
	t.Logf("stopped after %d steps with %d events readable: %s", out.Steps, len(events), out.Err)
}
