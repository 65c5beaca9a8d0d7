package containerd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Paths inside the sandbox.
const (
	sandboxHome   = "/home/spotter"
	sandboxRun    = "/spotter/run" // bind-mounted from the host: the agent's and the egress proxy's sockets
	sandboxAgent  = "/spotter/agent"
	agentSocket   = "agent.sock"
	egressSocket  = "egress.sock"
	proxyAddr     = "127.0.0.1:3128"
	sandboxUser   = "spotter"
	sandboxHost   = "sandbox"
	rootfsDirName = "rootfs"
	runDirName    = "run"
	logFileName   = "agent.log"
	ownerFileName = "owner"
)

// hostBinds are the host paths bind-mounted read-only into the sandbox, if
// they exist: the system's programs and libraries, and the few files of
// /etc that Chromium needs (the dynamic linker's cache, fonts, TLS roots).
// The rest of /etc, /root, /home, /var and /run stay out.
var hostBinds = []string{
	"/usr",
	"/etc/ld.so.cache",
	"/etc/fonts",
	"/etc/ssl",
	"/etc/alternatives",
	"/etc/localtime",
	"/var/cache/fontconfig",
}

// usrMerged are the top-level links of a merged-/usr system.
var usrMerged = map[string]string{"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}

// makeRootfs makes a sandbox's root directory under dir: the mount points
// of hostBinds and of the special file systems, the merged-/usr links, and
// a minimal /etc of its own (passwd, group, hosts, nsswitch.conf). The
// sandbox sees it read-only.
func makeRootfs(dir string, uid, gid uint32) error {
	for _, d := range []string{"proc", "dev", "sys", "tmp", "home/spotter", "spotter/run", "etc", "var/cache", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	// runc gives a tmpfs the mode of its mount point.
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		return err
	}
	home := filepath.Join(dir, "home/spotter")
	if err := os.Chmod(home, 0o700); err != nil {
		return err
	}
	if err := os.Chown(home, int(uid), int(gid)); err != nil {
		return err
	}
	for name, target := range usrMerged {
		hostTarget, err := os.Readlink("/" + name)
		if err != nil || filepath.Clean(hostTarget) != target {
			// Not a merged-/usr host: a directory that stays empty.
			if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for _, p := range hostBinds {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		dst := filepath.Join(dir, p)
		if fi.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else {
			err = os.WriteFile(dst, nil, 0o644)
		}
		if err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "spotter/agent"), nil, 0o755); err != nil {
		return err
	}
	u, g := strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10)
	files := map[string]string{
		"etc/passwd":        "root:x:0:0:root:/root:/usr/sbin/nologin\n" + sandboxUser + ":x:" + u + ":" + g + "::" + sandboxHome + ":/usr/sbin/nologin\n",
		"etc/group":         "root:x:0:\n" + sandboxUser + ":x:" + g + ":\n",
		"etc/hosts":         "127.0.0.1\tlocalhost " + sandboxHost + "\n::1\tlocalhost\n",
		"etc/hostname":      sandboxHost + "\n",
		"etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
		"etc/resolv.conf":   "# no DNS: the browser reaches the network only through the egress proxy\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// limits are a sandbox's resource limits.
type limits struct {
	memoryBytes uint64
	cpus        float64
	pids        int64
}

// cfsPeriod is the CPU quota period, in microseconds.
const cfsPeriod = 100_000

// specOpts builds the container's OCI spec on top of containerd's default
// (which gives it new PID, mount, IPC, UTS and network namespaces, masked
// /proc paths and no device access).
func specOpts(dir, agentPath string, agentArgs []string, uid, gid uint32, lim limits) []oci.SpecOpts {
	mounts := []specs.Mount{
		{Destination: sandboxRun, Type: "bind", Source: filepath.Join(dir, runDirName), Options: []string{"rbind", "rw", "nosuid", "nodev", "noexec"}},
		{Destination: sandboxAgent, Type: "bind", Source: agentPath, Options: []string{"bind", "ro", "nosuid", "nodev"}},
		{Destination: sandboxHome, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=0700", "size=512m", fmt.Sprintf("uid=%d", uid), fmt.Sprintf("gid=%d", gid)}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=256m"}},
	}
	for _, p := range hostBinds {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		mounts = append(mounts, specs.Mount{Destination: p, Type: "bind", Source: p, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	args := append([]string{sandboxAgent}, agentArgs...)
	quota := int64(lim.cpus * cfsPeriod)
	return []oci.SpecOpts{
		oci.WithRootFSPath(filepath.Join(dir, rootfsDirName)),
		oci.WithRootFSReadonly(),
		oci.WithHostname(sandboxHost),
		oci.WithMounts(mounts),
		oci.WithProcessArgs(args...),
		oci.WithProcessCwd(sandboxHome),
		oci.WithEnv([]string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=" + sandboxHome,
			"TMPDIR=/tmp",
			"XDG_CONFIG_HOME=" + sandboxHome + "/.config",
			"XDG_CACHE_HOME=" + sandboxHome + "/.cache",
			"LANG=C.UTF-8",
		}),
		oci.WithUIDGID(uid, gid),
		oci.WithCapabilities(nil),
		oci.WithNoNewPrivileges,
		oci.WithMemoryLimit(lim.memoryBytes),
		oci.WithMemorySwap(int64(lim.memoryBytes)),
		oci.WithCPUCFS(quota, cfsPeriod),
		oci.WithCPUBurst(uint64(quota)),
		oci.WithPidsLimit(lim.pids),
		oci.WithRlimit(&specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 8192, Soft: 8192}),
		oci.WithDevShmSize(64 * 1024),
	}
}
