package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/mcp"
)

// mcpRecorder keeps `spotter mcp --out`'s records: a trace directory for
// each session (its calls, actions, results and screenshots, as the
// executor records them, and the egress decisions of its display), and
// the session's report once it closes.
type mcpRecorder struct {
	dir string // "" records nothing
	log *slog.Logger

	mu sync.Mutex
	// opened holds the notes of displays opened and not yet attached to
	// their session (mcp.Server attaches each right after it opens it).
	opened map[mcp.Display]*displayNotes
}

func newMCPRecorder(dir string, log *slog.Logger) *mcpRecorder {
	return &mcpRecorder{dir: dir, log: log, opened: map[mcp.Display]*displayNotes{}}
}

// notes returns where a display about to open sends its notes.
func (r *mcpRecorder) notes() *displayNotes { return &displayNotes{log: r.log, keep: r.dir != ""} }

// open pairs display d with its notes, for attach.
func (r *mcpRecorder) open(d mcp.Display, n *displayNotes) {
	if r.dir == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opened[d] = n
}

// attach gives session id, whose display is d, a trace of its own in at,
// and has at's Close write its report. When the trace cannot be created
// it closes at and fails, saying why in the log only (the reason holds
// server paths).
func (r *mcpRecorder) attach(ctx context.Context, id string, d mcp.Display, at mcp.Attached) (mcp.Attached, error) {
	r.mu.Lock()
	n := r.opened[d]
	delete(r.opened, d)
	r.mu.Unlock()
	if n == nil {
		return at, nil
	}
	dir, tw, err := createSessionTrace(r.dir, id, time.Now())
	if err == nil {
		err = tw.Write(trace.Event{Type: trace.TypeRunStart, Task: "spotter mcp session " + id})
	}
	if err != nil {
		if tw != nil {
			err = errors.Join(err, tw.Close())
		}
		if at.Close != nil {
			err = errors.Join(err, at.Close(ctx))
		}
		r.log.Error("create the session's trace", "session", id, "err", err)
		return mcp.Attached{}, errors.New("could not create the session's record (--out); the server's log says why")
	}
	n.attach(tw)
	next := at.Close
	at.Trace = tw
	// mcp.Server closes the trace before it calls Close.
	at.Close = func(ctx context.Context) error {
		var err error
		if next != nil {
			err = next(ctx)
		}
		if _, rerr := trace.WriteReport(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("write the report of session %s: %w", id, rerr))
		}
		return err
	}
	return at, nil
}

// createSessionTrace creates the trace directory of session id in dir,
// named SESSION-TIME; another server's session of the same id and second
// gets -2, -3, ... after it.
func createSessionTrace(dir, id string, now time.Time) (string, *trace.Writer, error) {
	base := filepath.Join(dir, id+"-"+now.UTC().Format("20060102-150405"))
	for n := 1; n <= 100; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		tw, err := trace.Create(name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, tw, err
	}
	return "", nil, fmt.Errorf("%s: 100 directories of that name exist already", base)
}

// displayNotes takes a display's notes (its egress proxy's decisions): to
// the log, and to its session's trace once there is one; the notes before
// that wait for it (at most maxEarlyNotes of them).
type displayNotes struct {
	log  *slog.Logger
	keep bool // there will be a trace

	mu    sync.Mutex
	tw    *trace.Writer
	early []string
	lost  int
}

const maxEarlyNotes = 100

func (n *displayNotes) note(text string) {
	n.log.Info(text)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case !n.keep:
	case n.tw != nil:
		n.tw.Write(trace.Event{Type: trace.TypeNote, Text: text}) // fails once the session closed: nothing to record then
	case len(n.early) < maxEarlyNotes:
		n.early = append(n.early, text)
	default:
		n.lost++
	}
}

// attach sends the notes to tw from now on, the waiting ones first.
func (n *displayNotes) attach(tw *trace.Writer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tw = tw
	for _, text := range n.early {
		tw.Write(trace.Event{Type: trace.TypeNote, Text: text})
	}
	if n.lost > 0 {
		tw.Write(trace.Event{Type: trace.TypeNote, Text: fmt.Sprintf("%d more notes before the session opened are in the server's log only", n.lost)})
	}
	n.early, n.lost = nil, 0
}
