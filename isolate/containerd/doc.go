// Package containerd runs each session's browser in a container of its own,
// through containerd's daemon (github.com/containerd/containerd/v2's client).
//
// A [Runtime] connects to the daemon ([New]) and starts a [Sandbox] per
// session ([Runtime.Start]). Each sandbox is one container whose process is
// internal/agent, run from the host's Spotter binary (the hidden "spotter
// agent" subcommand), bind-mounted read-only.
//
// The container has its own PID, mount, IPC, UTS and network namespaces (its
// network has nothing but loopback), no capabilities, no new privileges,
// containerd's default seccomp profile, and runs as a non-root user (uid
// 10001 by default). Its root is a directory made per sandbox and mounted
// read-only: the host's /usr, and the few files of /etc that Chromium
// needs (the dynamic linker's cache, fonts, TLS roots), bind-mounted
// read-only, plus a minimal /etc of its own. The rest of the host (/root,
// /home, /var, the rest of /etc, other processes) is not there. Its home
// and /tmp are private tmpfs mounts, charged to its memory limit. Limits on
// memory (swap included), CPU time and pids come from the session's
// isolate.Config.
//
// Why the host's own files and not an image: no registry can be reached
// here and a debootstrap image would take minutes to build and hundreds of
// megabytes to store, while a bind-mounted /usr costs nothing, starts in
// milliseconds and runs the very Chromium the rest of Spotter is tested
// with. What the sandbox can read of the host is the same as what any
// unprivileged user of it can read under /usr: programs and libraries.
//
// Nothing in the sandbox listens on a host port. The agent serves a unix
// socket in a per-sandbox directory bind-mounted into the container; each
// connection there starts a fresh Chromium with --remote-debugging-pipe
// (chromium-headless-shell with begin-frame control for cdp.FrameControl,
// which cdp.ModeAuto picks when the host has it), and screen/cdp's Connect
// drives it over that socket. Before it says a word on that socket, the
// host checks that the process serving it runs as the sandbox's user, so a
// sandbox that replaces its socket with a link to another of the host's
// gets nothing. The browser's proxy is the
// agent's loopback port inside the sandbox's network namespace, which
// forwards to isolate/egress's proxy on another socket in the same
// directory, outside the sandbox.
//
// A sandbox whose processes the kernel kills for lack of memory (containerd
// publishes an OOM event) is killed whole, and its Health, Browser and the
// errors of an isolate.Display on it say so, wrapping isolate.ErrOOM and
// isolate.ErrDead. A sandbox that exits for any other reason wraps
// isolate.ErrDead. The session can start a new one.
//
// New removes what crashed runs left behind: containers and tasks labelled
// as Spotter's whose owning process no longer runs, their state
// directories, and their cgroups. Containers of Spotter processes that still
// run are left alone, so several Spotter processes (or test binaries) can
// share the namespace.
package containerd
