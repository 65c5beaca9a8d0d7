package bench

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The machine figures come first in every run: what the kernel charges
// for the things a browser does most beside computing, a page fault on
// fresh memory and a system call. Chromium maps new memory for every
// frame it draws (a shared-memory region for each screenshot, buffers of
// the software compositor), so where a page fault costs 15 µs instead of
// a fraction of one (a guest under nested or software virtualization) the
// same code steps several times slower. Figures of runs on different
// machines compare only when these agree. docs/PERFORMANCE.md, "The
// machine under the figures".

// machinePages is the size of each touched region, in 4 KiB pages.
const machinePages = 8192 // 32 MiB

// machine reports the cost of a page fault on anonymous and on shared
// memory (memfd, which Chromium's shared memory is), per 4 KiB page, and
// of a system call, each the median of 5 samples, with the kernel's
// transparent huge page settings beside them.
func (r *runner) machine() {
	anon, shm := thpSetting("enabled"), thpSetting("shmem_enabled")
	report := func(name, note string, measure func() (time.Duration, error)) {
		var samples []time.Duration
		for range 5 {
			d, err := measure()
			if err != nil {
				r.report(Figure{Section: "machine", Name: name, Note: "not measured: " + err.Error()})
				return
			}
			samples = append(samples, d)
		}
		slices.Sort(samples)
		r.report(Figure{Section: "machine", Name: name, Unit: "µs",
			Value: float64(samples[len(samples)/2].Nanoseconds()) / 1000, Note: note})
	}
	report("page fault, anonymous memory, per 4 KiB page", "transparent huge pages: "+anon,
		func() (time.Duration, error) { return touchAnon(machinePages) })
	report("page fault, shared memory (memfd), per 4 KiB page", "transparent huge pages for shared memory: "+shm,
		func() (time.Duration, error) { return touchMemfd(machinePages) })
	report("system call (getppid)", "", func() (time.Duration, error) {
		const n = 20000
		t := time.Now()
		for range n {
			syscall.Getppid()
		}
		return time.Since(t) / n, nil
	})
}

// touchAnon maps pages of fresh anonymous memory, writes a byte to each,
// unmaps them, and returns the time per page.
func touchAnon(pages int) (time.Duration, error) {
	t := time.Now()
	if err := touchMapped(-1, pages, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return 0, err
	}
	return time.Since(t) / time.Duration(pages), nil
}

// touchMemfd does the same with a new memfd region mapped shared, as
// Chromium creates one for each screenshot it hands between processes.
func touchMemfd(pages int) (time.Duration, error) {
	t := time.Now()
	fd, err := unix.MemfdCreate("spotter-bench", unix.MFD_CLOEXEC)
	if err != nil {
		return 0, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	if err := f.Truncate(int64(pages) * 4096); err != nil {
		return 0, err
	}
	if err := touchMapped(fd, pages, unix.MAP_SHARED); err != nil {
		return 0, err
	}
	return time.Since(t) / time.Duration(pages), nil
}

// touchMapped maps pages of fd (-1: anonymous memory), writes a byte to
// each, and unmaps them.
func touchMapped(fd, pages, flags int) error {
	b, err := unix.Mmap(fd, 0, pages*4096, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

var bracketed = regexp.MustCompile(`\[([a-z_+]+)\]`)

// thpSetting reads the selected value of a transparent huge page setting
// ("always [madvise] never" → "madvise"), or says why it could not.
func thpSetting(name string) string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/" + name)
	if err != nil {
		return "unknown (not readable)"
	}
	return selected(b)
}

// selected returns the bracketed value of a kernel setting's file.
func selected(b []byte) string {
	if m := bracketed.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return "unknown"
}
