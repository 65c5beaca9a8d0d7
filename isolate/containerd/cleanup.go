package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// cleanup removes what sandboxes of dead Spotter processes left behind in
// the runtime's namespace: their tasks, containers, state directories and
// cgroups. Sandboxes of processes that still run are left alone. Every
// sandbox has an owner; one made before unnamed sandboxes were named by
// their id has no labelSandbox (containerd drops a label with an empty
// value), so sandboxes are found by their owner.
func (r *Runtime) cleanup(ctx context.Context) error {
	cs, err := r.c.Containers(ctx, `labels."`+labelOwner+`"`)
	if err != nil {
		return fmt.Errorf("list leftover sandboxes: %w", err)
	}
	var errs []error
	live := map[string]bool{}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil {
			continue
		}
		if ownerAlive(labels[labelOwner]) {
			live[c.ID()] = true
			continue
		}
		r.log.Info("removing a leftover sandbox", logKeySandbox, c.ID(), "owner", labels[labelOwner])
		errs = append(errs, deleteContainer(ctx, c))
	}
	// State directories whose owner is gone, container or not.
	entries, _ := os.ReadDir(r.cfg.StateDir)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), idPrefix) || live[e.Name()] {
			continue
		}
		dir := filepath.Join(r.cfg.StateDir, e.Name())
		owner, _ := os.ReadFile(filepath.Join(dir, ownerFileName))
		if ownerAlive(strings.TrimSpace(string(owner))) {
			live[e.Name()] = true // a sandbox being made right now
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	removeStaleCgroups(r.cfg.Namespace, live)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove leftover sandboxes: %w", err)
	}
	return nil
}

// deleteContainer kills and deletes c's task, if any, then c.
func deleteContainer(ctx context.Context, c client.Container) error {
	if t, err := c.Task(ctx, nil); err == nil {
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", c.ID(), err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("load task %s: %w", c.ID(), err)
	}
	if err := c.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", c.ID(), err)
	}
	return nil
}

// removeStaleCgroups removes the empty cgroups of containers of ours that
// no longer exist. runc removes them when a task is deleted; a shim that
// died can leave them.
func removeStaleCgroups(namespace string, live map[string]bool) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + namespace)
	if fi, err := os.Stat("/sys/fs/cgroup/" + namespace); err == nil && fi.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/"+namespace) // cgroup v2
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), idPrefix) && !live[e.Name()] {
				// Fails, harmlessly, on a cgroup that still has processes.
				syscall.Rmdir(filepath.Join(root, e.Name()))
			}
		}
	}
}

// tail returns the last n bytes of the file at path, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// browserLog is the tail of the agent's log at path once the browser it
// started last has exited, or after a second: the log reaches its file
// through containerd's shim, after the connection that told of the
// browser's end, and what the browser said before it exited is the reason
// a caller wants.
func browserLog(ctx context.Context, path string) string {
	const n = 1024
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		log := tail(path, n)
		started := strings.LastIndex(log, `msg="browser started"`)
		if started < 0 || strings.Contains(log[started:], `msg="browser exited"`) {
			return log
		}
		select {
		case <-ctx.Done():
			return log
		case <-tick.C:
		}
	}
}
