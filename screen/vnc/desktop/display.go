package desktop

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DefaultLockDir is where desktops lock their display numbers by default,
// with flock on empty files named .spotter-X<n>.lock that stay there; the
// kernel drops a lock when its process dies. X servers keep their own lock
// files there too (/tmp/.X<n>-lock).
const DefaultLockDir = "/tmp"

// Display numbers that desktops use: above the few that people's own X
// sessions take.
const (
	firstDisplay = 20
	lastDisplay  = 999
)

// x11SocketDir holds the X servers' unix sockets.
const x11SocketDir = "/tmp/.X11-unix"

// xLockFile is the lock file an X server on display n keeps.
func xLockFile(n int) string { return "/tmp/.X" + strconv.Itoa(n) + "-lock" }

// reserveDisplay finds a display number that no other desktop, of this
// process or another, holds and that no X server uses, and locks it. The
// lock is an flock on dir/.spotter-X<n>.lock, held until the returned file
// is closed (or this process dies, which also kills its desktops).
func reserveDisplay(dir string) (int, *os.File, error) {
	for n := firstDisplay; n <= lastDisplay; n++ {
		f, err := os.OpenFile(filepath.Join(dir, ".spotter-X"+strconv.Itoa(n)+".lock"), os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			continue // another user's lock file that we may not open
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return 0, nil, fmt.Errorf("lock display :%d: %w", n, err)
		}
		if xServerOn(n) {
			f.Close()
			continue
		}
		return n, f, nil
	}
	return 0, nil, fmt.Errorf("no free X display number in :%d..:%d", firstDisplay, lastDisplay)
}

// xServerOn reports whether an X server holds display n: a lock file of a
// process that still runs, or a socket that accepts connections (an X
// server started with -displayfd keeps no lock file).
func xServerOn(n int) bool {
	if b, err := os.ReadFile(xLockFile(n)); err == nil {
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return true // unreadable: leave it alone
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			return true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return true
	}
	c, err := net.Dial("unix", filepath.Join(x11SocketDir, "X"+strconv.Itoa(n)))
	if err == nil {
		c.Close()
		return true
	}
	return false
}
