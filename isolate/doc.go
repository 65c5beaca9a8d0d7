// Package isolate runs each session's browser in a sandbox of its own.
// Computer-use agents act on untrusted pages, so a page must reach neither
// the host nor any network the session did not allow.
//
// A [Sandbox] gives a fresh browser ([Sandbox.Browser], a *cdp.Browser), says
// whether it still works ([Sandbox.Health]) and cleans up after itself
// ([Sandbox.Close]). Two backends provide one:
//
//   - isolate/containerd: one container per session, through containerd's
//     daemon. The container has its own PID, mount, IPC, UTS and network
//     namespaces; a read-only root made of the host's /usr and a few files
//     of /etc bind-mounted read-only; a private tmpfs home; memory, CPU and
//     pids limits; no capabilities and no new privileges; a non-root user;
//     and no network but loopback. Inside, internal/agent starts Chromium
//     and carries its DevTools pipe out over a unix socket, and bridges the
//     browser's proxy traffic to Spotter's egress proxy over another.
//   - isolate/local: a browser process on the host, for development. It
//     uses the same egress proxy, but nothing stops a page from other
//     network access, and no limit applies.
//
// In both, the browser's only way out is isolate/egress, a proxy that
// Spotter runs outside the sandbox and that enforces the session's
// allowlist and denylist for HTTP and HTTPS, logging every decision.
//
// [Open] opens a display in a sandbox whose errors say why the sandbox died:
// a display whose sandbox hit its memory limit fails with an error that wraps
// both screen.ErrGone and [ErrOOM]. [Choose] picks a backend the way
// --isolate does. docs/ISOLATION.md describes the design and its limits.
package isolate
