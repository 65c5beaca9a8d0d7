package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// A setup opens sessions for the concurrency ramp.
type setup struct {
	name string
	open func(ctx context.Context) (display, error)
	// memory returns the memory the sessions use now, in bytes.
	memory func() (int64, error)
	close  func()
}

// levels are the session counts of the ramp, up to Options.MaxSessions:
// 128 at the most.
var levels = []int{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 80, 96, 112, 128}

func (r *runner) concurrency(ctx context.Context) error {
	var shared *cdp.Browser
	var pool *cdp.Pool
	cores := runtime.NumCPU()
	setups := []setup{
		{name: "shared browser, a context per session",
			open: func(ctx context.Context) (display, error) {
				if shared == nil {
					b, err := r.browser(ctx, cdp.ModeAuto)
					if err != nil {
						return nil, err
					}
					shared = b
				}
				return shared.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize})
			},
			memory: func() (int64, error) { return treePSS(os.Getpid()) },
			close: func() {
				if shared != nil {
					shared.Close(context.Background())
					shared = nil
				}
			}},
		// One browser draws one frame at a time; a browser per core,
		// each shared by its share of the sessions, draws that many.
		{name: fmt.Sprintf("shared browsers (%d, one per core), a context per session", cores),
			open: func(ctx context.Context) (display, error) {
				if pool == nil {
					p, err := cdp.LaunchPool(ctx, cdp.Config{Mode: cdp.ModeAuto}, cores)
					if err != nil {
						return nil, err
					}
					pool = p
				}
				return pool.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize})
			},
			memory: func() (int64, error) { return treePSS(os.Getpid()) },
			close: func() {
				if pool != nil {
					pool.Close(context.Background())
					pool = nil
				}
			}},
		{name: "a browser per session",
			open: func(ctx context.Context) (display, error) {
				return cdp.Open(ctx, cdp.Config{Exec: r.o.Headless, Viewport: modelSize})
			},
			memory: func() (int64, error) { return treePSS(os.Getpid()) },
			close:  func() {}},
	}
	if sb, err := r.sandboxes(ctx, 0); err != nil {
		r.report(Figure{Section: "concurrency", Name: "sandboxed sessions", Note: "not measured: " + err.Error()})
	} else {
		defer sb.Close()
		setups = append(setups, setup{name: "sandboxed (containerd), a browser per sandbox",
			open:   func(ctx context.Context) (display, error) { return sb.open(ctx, r.site, "") },
			memory: sb.memory,
			close:  func() {}})
	}
	for _, s := range setups {
		if err := r.ramp(ctx, s); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.report(Figure{Section: "concurrency", Name: s.name, Note: fmt.Sprintf("FAILED: %v", err)})
		}
	}
	return nil
}

// ramp adds sessions level by level until MaxSessions, or until the p95
// step has doubled from one session's and two levels in a row (or one
// over 2 s) passed 250 ms: on a shared machine one level's p95 can be one
// bad moment. It reports each level, the last level before the p95
// doubled and the highest under 250 ms.
func (r *runner) ramp(ctx context.Context, s setup) error {
	var tabs []*tab
	defer func() {
		for _, t := range tabs {
			t.d.Close(context.WithoutCancel(ctx))
		}
		s.close()
	}()
	var p95one, memOne float64
	best, under250, over := 0, 0, 0
	doubled := false
	for _, n := range levels {
		if n > r.o.MaxSessions {
			break
		}
		for len(tabs) < n {
			d, err := s.open(ctx)
			if err != nil {
				return fmt.Errorf("open session %d: %w", len(tabs)+1, err)
			}
			t, err := openTab(ctx, d, r.site.url(pageStatic))
			if err != nil {
				d.Close(ctx)
				return err
			}
			tabs = append(tabs, t)
		}
		samples, wrong, wall, err := r.together(ctx, tabs)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.report(Figure{Section: "concurrency", Name: fmt.Sprintf("%s: %d sessions", s.name, n),
				Note: fmt.Sprintf("FAILED: %v", err)})
			break
		}
		mem, err := s.memory()
		if err != nil {
			return err
		}
		sum := stats.Summarize(samples)
		f := latency("concurrency", fmt.Sprintf("%s: %d sessions%s", s.name, n, r.thinkLabel()), samples)
		f.Wrong = wrong
		steps := float64(len(samples)) / wall.Seconds()
		f.Note = fmt.Sprintf("%.1f steps/s, %.0f MB in all", steps, float64(mem)/1e6)
		if n == 1 {
			p95one, memOne = ms(sum.P95), float64(mem)
		} else {
			f.Note += fmt.Sprintf(", %.0f MB per extra session", (float64(mem)-memOne)/float64(n-1)/1e6)
		}
		r.report(f)
		if f.P95 < 250 && f.Wrong == 0 {
			under250 = n
		}
		if f.P95 > 2*p95one && n > 1 {
			doubled = true
		}
		if !doubled {
			best = n
		}
		if f.P95 >= 250 {
			over++
		} else {
			over = 0
		}
		if doubled && (over >= 2 || f.P95 > 2000) {
			break
		}
	}
	sum := Figure{Section: "concurrency", Name: s.name + ": sessions before the p95 step doubles" + r.thinkLabel(), Unit: "sessions",
		Value: float64(best), Note: fmt.Sprintf("one session's p95 is %.1f ms", p95one)}
	r.report(sum)
	cap := Figure{Section: "concurrency", Name: s.name + ": most sessions with p95 step < 250 ms" + r.thinkLabel(), Unit: "sessions", Value: float64(under250)}
	switch {
	case strings.HasPrefix(s.name, "shared"):
		cap.target(">= 64 sessions", under250 >= 64)
	case strings.HasPrefix(s.name, "sandboxed"):
		cap.target(">= 96 sessions", under250 >= 96)
	}
	r.report(cap)
	return nil
}

// together runs StepsPerSession steps on every tab at once, and returns
// every step's latency, the wrong screenshots (checked once every step is
// done), and the wall time.
func (r *runner) together(ctx context.Context, tabs []*tab) ([]time.Duration, int, time.Duration, error) {
	var mu sync.Mutex
	var samples []time.Duration
	var shots []shotCheck
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i, t := range tabs {
		wg.Go(func() {
			// Sessions think at staggered times, as independent agents do.
			offset := time.Duration(0)
			if r.o.Think > 0 {
				offset = r.o.Think * time.Duration(i) / time.Duration(len(tabs))
			}
			for step := range r.o.StepsPerSession {
				wait := offset
				if step > 0 {
					wait = r.o.Think
				}
				if wait > 0 {
					tm := time.NewTimer(wait)
					select {
					case <-tm.C:
					case <-ctx.Done():
						tm.Stop()
						return
					}
				}
				took, shot, err := t.step(ctx, screen.CaptureOptions{Size: modelSize, Format: screen.PNG})
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				samples, shots = append(samples, took), append(shots, shot)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	return samples, countWrong(shots), wall, firstErr
}

// treePSS returns the proportional set size of pid's descendants (its own
// excluded): the browsers it started. PSS divides shared pages among the
// processes sharing them, so the sum is what the tree really costs.
func treePSS(pid int) (int64, error) {
	ps, err := descendants(pid)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, p := range ps {
		total += pss(p)
	}
	return total, nil
}

// descendants returns the processes below pid.
func descendants(pid int) ([]int, error) {
	parents := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parents[p] = pp
		}
	}
	var out []int
	for p := range parents {
		if p != pid && descends(p, pid, parents) {
			out = append(out, p)
		}
	}
	return out, nil
}

func descends(p, root int, parents map[int]int) bool {
	for range 64 {
		pp, ok := parents[p]
		if !ok || pp == 0 {
			return false
		}
		if pp == root {
			return true
		}
		p = pp
	}
	return false
}

// pss returns a process's PSS in bytes, or 0 if it is gone.
func pss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// thinkLabel names the think time in figure names.
func (r *runner) thinkLabel() string {
	if r.o.Think <= 0 {
		return ", steps back to back"
	}
	return fmt.Sprintf(", %v between a session's steps", r.o.Think)
}
