package session

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spotter-harness/spotter/harness/trace"
)

// runName is the name of a run's trace directory in a session's
// directory: t1, t2, ... (see start).
var runName = regexp.MustCompile(`^t[1-9][0-9]{0,8}$`)

// reportURL is the path of the report of the run whose trace is dir, or
// "" without one.
func (s *Session) reportURL(dir string) string {
	if !runName.MatchString(dir) {
		return ""
	}
	return "/session/" + url.PathEscape(s.id) + "/report/" + dir
}

// RunDir returns the trace directory of the session's run (t1, t2, ...),
// for its report; an unknown run is ErrNotFound.
func (s *Session) RunDir(run string) (string, error) {
	if !runName.MatchString(run) {
		return "", fmt.Errorf("%w: no run %q (want t1, t2, ...)", ErrNotFound, run)
	}
	dir := filepath.Join(s.dir, run)
	if fi, err := os.Stat(filepath.Join(dir, trace.EventsFile)); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: the session has no run %s", ErrNotFound, run)
	}
	return dir, nil
}
