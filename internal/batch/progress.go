package batch

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Event is one JSON line of a batch's progress when it is not drawn as a
// bar: "start", "skip" (finished by an earlier run) and "finish" for each
// job, then one "summary".
type Event struct {
	Event    string        `json:"event"`
	Time     time.Time     `json:"time"`
	ID       string        `json:"id,omitempty"`
	Line     int           `json:"line,omitempty"`
	Status   Status        `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Done     int           `json:"done"` // jobs finished, this run or earlier
	Total    int           `json:"total"`

	// Summary events only.
	Passed  int           `json:"passed,omitempty"`
	Failed  int           `json:"failed,omitempty"`
	Errors  int           `json:"errors,omitempty"`
	Skipped int           `json:"skipped,omitempty"`
	Reused  int           `json:"reused,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`
}

// progress reports a batch as it goes, as JSON lines or as a bar. Its
// methods are safe for concurrent use. With a bar, begin starts a
// goroutine that redraws it every second; end stops it and waits for it.
type progress struct {
	w     io.Writer // nil: report nothing
	bar   bool
	width int

	mu                                      sync.Mutex
	started                                 time.Time
	total, done                             int
	passed, failed, errors, reused, skipped int
	running                                 []string
	stop                                    chan struct{}
	ticker                                  sync.WaitGroup
}

func newProgress(w io.Writer, bar bool, width int) *progress {
	return &progress{w: w, bar: bar, width: max(width, 20)}
}

func (p *progress) begin(total int, started time.Time) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.started = total, started
	if !p.bar {
		return
	}
	p.draw()
	p.stop = make(chan struct{})
	p.ticker.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	})
}

func (p *progress) start(j Job) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = append(p.running, j.ID)
	if p.bar {
		p.draw()
		return
	}
	p.emit(Event{Event: "start", ID: j.ID, Line: j.Line})
}

func (p *progress) skip(r JobResult) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.reused++
	p.tally(r.Status)
	if p.bar {
		p.draw()
		return
	}
	p.emit(Event{Event: "skip", ID: r.ID, Line: r.Line, Status: r.Status, Error: r.Error, Duration: r.Duration})
}

func (p *progress) finish(r JobResult) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.running, r.ID); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
	if r.Status != Skipped {
		p.done++
	}
	p.tally(r.Status)
	if !p.bar {
		p.emit(Event{Event: "finish", ID: r.ID, Line: r.Line, Status: r.Status, Error: r.Error, Duration: r.Duration})
		return
	}
	if r.Status == Failed || r.Status == Error {
		// A line of its own above the bar, so failures stay on screen.
		label := map[Status]string{Failed: "FAIL ", Error: "ERROR"}[r.Status]
		line := fmt.Sprintf("%s %s (%s): %s", label, r.ID, r.Duration.Round(time.Millisecond), r.Error)
		fmt.Fprintf(p.w, "\r\x1b[K%s\n", clip(line, p.width-1))
	}
	p.draw()
}

func (p *progress) tally(s Status) {
	switch s {
	case Passed:
		p.passed++
	case Failed:
		p.failed++
	case Error:
		p.errors++
	case Skipped:
		p.skipped++
	}
}

func (p *progress) end(s Summary) {
	if p.w == nil {
		return
	}
	if p.bar && p.stop != nil {
		close(p.stop)
		p.ticker.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar {
		p.draw()
		fmt.Fprintln(p.w)
		return
	}
	p.emit(Event{Event: "summary", Done: s.Passed + s.Failed + s.Errors, Total: s.Total,
		Passed: s.Passed, Failed: s.Failed, Errors: s.Errors, Skipped: s.Skipped, Reused: s.Reused, Elapsed: s.Elapsed})
}

// emit writes e as one line. The caller holds p.mu.
func (p *progress) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Event != "summary" {
		e.Done, e.Total = p.done, p.total
	}
	b, err := json.Marshal(e)
	if err != nil {
		return // an Event always encodes
	}
	p.w.Write(append(b, '\n'))
}

// draw redraws the bar on the current line. The caller holds p.mu.
func (p *progress) draw() {
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(time.Since(p.started).Truncate(time.Second)))
}

// minName is how much of a running job's name the bar keeps at least, so
// that a narrow terminal still says which job runs.
const minName = 12

// line is the bar's text after el, at most p.width-1 columns. On a wide
// terminal it says everything; on a narrow one the bar gets shorter and the
// counts terser, then go, before a running job's name is cut: the names say
// which jobs are running, which nothing else on the screen does. A name is
// cut last, in its middle, to no fewer than minName runes. The caller holds
// p.mu.
func (p *progress) line(el time.Duration) string {
	width := p.width - 1
	reused := ""
	if p.reused > 0 {
		reused = fmt.Sprintf("  (%d from an earlier run)", p.reused)
	}
	bar := func(cells int) string {
		filled := 0
		if p.total > 0 {
			filled = cells * p.done / p.total
		}
		return "[" + strings.Repeat("#", filled) + strings.Repeat("-", cells-filled) + "]"
	}
	levels := []struct{ status, prefix string }{
		{fmt.Sprintf("%s %d/%d  %d passed  %d failed  %d errors%s  %s", bar(24), p.done, p.total, p.passed, p.failed, p.errors, reused, clock(el)), "  running: "},
		{fmt.Sprintf("%s %d/%d  %d passed  %d failed  %d errors  %s", bar(10), p.done, p.total, p.passed, p.failed, p.errors, clock(el)), "  running: "},
		{fmt.Sprintf("%d/%d ok %d fail %d err %d %s", p.done, p.total, p.passed, p.failed, p.errors, clock(el)), " > "},
		{fmt.Sprintf("%d/%d %s", p.done, p.total, clock(el)), " > "},
		{fmt.Sprintf("%d/%d", p.done, p.total), " "},
	}
	if len(p.running) == 0 {
		for _, l := range levels {
			if runeLen(l.status) <= width {
				return l.status
			}
		}
		return clip(levels[len(levels)-1].status, width)
	}
	// The most detailed status that leaves room for the first running
	// job's whole name (and the count of the others); failing that, the
	// tersest, which leaves the most room.
	whole := runeLen(clip(p.running[0], 1<<20))
	if len(p.running) > 1 {
		whole += runeLen(fmt.Sprintf(", +%d", len(p.running)-1))
	}
	for _, l := range levels {
		if room := width - runeLen(l.status) - runeLen(l.prefix); room >= whole {
			return l.status + l.prefix + names(p.running, room)
		}
	}
	l := levels[len(levels)-1]
	return clip(l.status+l.prefix+names(p.running, max(width-runeLen(l.status)-runeLen(l.prefix), minName)), width)
}

// names lists the running jobs in at most room columns: as many whole
// names as fit, then "+N" for the others; a first name too long for the
// room keeps its start and its end, which tell similar names apart.
func names(running []string, room int) string {
	clean := make([]string, len(running))
	for i, n := range running {
		clean[i] = clip(n, 1<<20)
	}
	if all := strings.Join(clean, ", "); runeLen(all) <= room {
		return all
	}
	for k := len(clean) - 1; k >= 1; k-- {
		s := strings.Join(clean[:k], ", ") + fmt.Sprintf(", +%d", len(clean)-k)
		if runeLen(s) <= room {
			return s
		}
	}
	more := ""
	if len(clean) > 1 {
		more = fmt.Sprintf(" +%d", len(clean)-1)
	}
	return middle(clean[0], max(room-runeLen(more), 1)) + more
}

// middle shortens s to n runes by cutting out its middle.
func middle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 3 {
		return string(r[:n])
	}
	head := (n - 1 + 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

func runeLen(s string) int { return len([]rune(s)) }

// clock formats d as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// clip shortens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' ' // no newline or escape sequence of a job's error may break the bar
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
