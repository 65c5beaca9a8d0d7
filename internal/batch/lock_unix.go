//go:build unix

package batch

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lock takes an exclusive, non-blocking lock on path, creating it. The
// kernel drops the lock when the process dies, even by kill -9, so a lock
// is never left stale. The returned func releases it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock batch: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock batch: %w", err)
	}
	return func() { f.Close() }, nil
}
