package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spotter-harness/spotter/screen"
)

// TestDeferShotSync checks that a deferred screenshot is whole and named at
// once, that SyncShots syncs each file written since (a file gone before
// its sync is an error) and only those, and that Close syncs what is left.
func TestDeferShotSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		t.Fatalf("Create() = %v", err)
	}
	w.DeferShotSync()
	name, err := w.WriteShot(screen.Shot{Frame: testFrame("f1"), Data: pngSignature})
	if err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, pngSignature) {
		t.Errorf("ReadFile(%s) before SyncShots = %q, %v, want the whole shot", name, b, err)
	}
	if err := w.SyncShots(); err != nil {
		t.Errorf("SyncShots() = %v", err)
	}
	if err := w.SyncShots(); err != nil {
		t.Errorf("SyncShots() with nothing new = %v", err)
	}
	// A file removed before its sync shows that SyncShots syncs it.
	name, err = w.WriteShot(screen.Shot{Frame: testFrame("f2"), Data: pngSignature})
	if err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	if err := w.SyncShots(); err == nil {
		t.Errorf("SyncShots() of a removed file = nil, want an error")
	}
	if _, err := w.WriteShot(screen.Shot{Frame: testFrame("f3"), Data: pngSignature}); err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close() with an unsynced shot = %v", err)
	}
}
