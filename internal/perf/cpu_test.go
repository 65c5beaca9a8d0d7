package perf_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// CPU time is the measure of work that load from elsewhere on the machine
// disturbs least: a path that waits longer for a core uses no more of it.
// The run time of every thread comes from /proc/<pid>/task/<tid>/schedstat,
// in nanoseconds.

// cpuUsed returns the CPU time used so far by the browser of kind k, all its
// processes and threads, plus this test process's own threads (decoding and
// resizing in Go).
func cpuUsed(k kind) (time.Duration, error) {
	b := &browsers[k]
	if b.ctx == nil {
		return 0, fmt.Errorf("%v is not running", k)
	}
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0, fmt.Errorf("%v has no process", k)
	}
	pids, err := processTree(c.Browser.Process().Pid)
	if err != nil {
		return 0, err
	}
	total := time.Duration(0)
	for _, pid := range append(pids, os.Getpid()) {
		total += threadsCPU(pid)
	}
	return total, nil
}

// processTree returns root and all its descendants.
func processTree(root int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPID(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
}

// parentPID reads the parent of pid from /proc/<pid>/stat, whose second
// field, the command name in parentheses, may hold spaces and parentheses.
func parentPID(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false // gone
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// threadsCPU returns the CPU time of pid's threads that are still alive.
func threadsCPU(pid int) time.Duration {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0 // gone
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}
