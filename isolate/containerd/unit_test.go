package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
)

// The spec a sandbox gets, checked without a daemon.
func TestSpec(t *testing.T) {
	dir := t.TempDir()
	opts := specOpts(dir, "/usr/bin/spotter", []string{"agent", "--socket", "x"}, 10001, 10002,
		limits{memoryBytes: 256 << 20, cpus: 0.5, pids: 300})
	ctx := namespaces.WithNamespace(context.Background(), "spotter")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "spotter-test"}, opts...)
	if err != nil {
		t.Fatalf("GenerateSpec() = %v", err)
	}
	var nss []string
	for _, ns := range s.Linux.Namespaces {
		if ns.Path != "" {
			t.Errorf("namespace %s joins %s, want a new one", ns.Type, ns.Path)
		}
		nss = append(nss, string(ns.Type))
	}
	slices.Sort(nss)
	if diff := cmp.Diff([]string{"ipc", "mount", "network", "pid", "uts"}, nss); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	type summary struct {
		Root       string
		Readonly   bool
		Args       []string
		UID, GID   uint32
		NoNewPrivs bool
		Caps       []string
		Memory     int64
		Swap       int64
		Quota      int64
		Period     uint64
		Pids       int64
		Hostname   string
	}
	got := summary{
		Root: s.Root.Path, Readonly: s.Root.Readonly, Args: s.Process.Args,
		UID: s.Process.User.UID, GID: s.Process.User.GID, NoNewPrivs: s.Process.NoNewPrivileges,
		Caps:   append(append(s.Process.Capabilities.Bounding, s.Process.Capabilities.Effective...), s.Process.Capabilities.Permitted...),
		Memory: *s.Linux.Resources.Memory.Limit, Swap: *s.Linux.Resources.Memory.Swap,
		Quota: *s.Linux.Resources.CPU.Quota, Period: *s.Linux.Resources.CPU.Period,
		Pids: *s.Linux.Resources.Pids.Limit, Hostname: s.Hostname,
	}
	want := summary{
		Root: filepath.Join(dir, "rootfs"), Readonly: true, Args: []string{"/spotter/agent", "agent", "--socket", "x"},
		UID: 10001, GID: 10002, NoNewPrivs: true,
		Memory: 256 << 20, Swap: 256 << 20, Quota: 50_000, Period: 100_000, Pids: 300, Hostname: "sandbox",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}

	// Every bind from the host is read-only, except the socket directory.
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
		if m.Type != "bind" {
			continue
		}
		ro := slices.Contains(m.Options, "ro")
		if want := m.Destination != sandboxRun; ro != want {
			t.Errorf("bind mount %s → %s read-only = %v, want %v", m.Source, m.Destination, ro, want)
		}
	}
	for _, dest := range []string{"/usr", sandboxAgent, sandboxRun, sandboxHome, "/tmp", "/proc", "/dev/shm"} {
		if _, ok := mounts[dest]; !ok {
			t.Errorf("no mount at %s", dest)
		}
	}
	for _, dest := range []string{"/etc", "/root", "/home", "/var", "/run/containerd"} {
		if _, ok := mounts[dest]; ok {
			t.Errorf("host's %s is mounted into the sandbox", dest)
		}
	}
	if m := mounts[sandboxHome]; m.Type != "tmpfs" || !slices.Contains(m.Options, "uid=10001") {
		t.Errorf("home mount = %+v, want a tmpfs owned by uid 10001", m)
	}
}

func TestMakeRootfs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rootfs")
	if err := makeRootfs(dir, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
		t.Fatalf("makeRootfs() = %v", err)
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "spotter:x:") {
		t.Errorf("etc/passwd = %q, %v; want the sandbox user", passwd, err)
	}
	for _, p := range []string{"usr", "proc", "dev", "sys", "tmp", "home/spotter", "spotter/run", "spotter/agent", "etc/hosts"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("rootfs lacks %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/shadow")); err == nil {
		t.Errorf("rootfs has etc/shadow")
	}
	fi, err := os.Stat(filepath.Join(dir, "tmp"))
	if err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("rootfs tmp mode = %v, %v; want sticky 0777", fi.Mode(), err)
	}
}

func TestOwner(t *testing.T) {
	me, err := processOwner(os.Getpid())
	if err != nil {
		t.Fatalf("processOwner(self) = %v", err)
	}
	tests := []struct {
		owner string
		want  bool
	}{
		{me, true},
		{strings.Split(me, ":")[0] + ":1", false}, // same pid, other start time
		{"999999999:1", false},
		{"", false},
		{"garbage", false},
		{"-1:0", false},
	}
	for _, tt := range tests {
		if got := ownerAlive(tt.owner); got != tt.want {
			t.Errorf("ownerAlive(%q) = %v, want %v", tt.owner, got, tt.want)
		}
	}
}

func TestNewWithoutDaemon(t *testing.T) {
	_, err := New(t.Context(), Config{Socket: filepath.Join(t.TempDir(), "nope.sock"), Agent: os.Args[0]})
	if !errors.Is(err, isolate.ErrUnavailable) {
		t.Errorf("New() without a daemon = %v, want ErrUnavailable", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Agent: "/nonexistent/spotter"}, "agent program"},
		{Config{Agent: os.Args[0], StateDir: "/" + strings.Repeat("x", 80)}, "too long for unix socket paths"},
	}
	for _, tt := range tests {
		_, err := New(t.Context(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
}

// A warm sandbox fits a session with the same limits and flags, defaults
// counted as given, whatever its name and egress.
func TestFits(t *testing.T) {
	spare := isolate.Config{}
	for _, c := range []struct {
		cfg  isolate.Config
		want bool
	}{
		{isolate.Config{Name: "s", Egress: egress.Policy{Allow: []string{"example.com"}}}, true},
		{isolate.Config{MemoryMiB: isolate.DefaultMemoryMiB, CPUs: isolate.DefaultCPUs}, true},
		{isolate.Config{MemoryMiB: 512}, false},
		{isolate.Config{CPUs: 2}, false},
		{isolate.Config{Pids: 64}, false},
		{isolate.Config{Flags: []string{"--lang=de"}}, false},
	} {
		if got := Fits(spare, c.cfg); got != c.want {
			t.Errorf("Fits(defaults, %+v) = %v, want %v", c.cfg, got, c.want)
		}
	}
}
