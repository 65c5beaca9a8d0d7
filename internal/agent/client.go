package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// ErrAgent marks a request that the agent received and refused, such as a
// browser that would not start.
var ErrAgent = errors.New("sandbox agent refused")

// ErrPeer marks a socket served by a process other than the agent: one
// running as another user than the sandbox's. A sandbox can replace its
// socket with a link to some other socket of the host; the host then
// refuses to talk to it.
var ErrPeer = errors.New("socket is not served by the sandbox's agent")

// DialBrowser connects to the agent at socket and asks it for a fresh
// browser. The returned connection carries Chromium's pipe protocol (JSON
// messages ended by a zero byte); closing it stops that browser. If uid is
// not negative, the process serving socket must run as uid (see ErrPeer).
// With frameControl, the browser is chromium-headless-shell started with
// begin-frame control (screen/cdp's FrameControl mode). ctx bounds the dial
// and the browser's start only.
func DialBrowser(ctx context.Context, socket string, uid int, frameControl bool) (net.Conn, error) {
	req := "CDP"
	if frameControl {
		req += " frame-control"
	}
	c, _, err := request(ctx, socket, req, uid)
	return c, err
}

// DialDesktop connects to the agent at socket and asks it for a fresh
// desktop of size w x h px: Xvnc with Openbox and an xterm (or argv, when
// not empty), inside the sandbox. The returned connection carries RFB
// (screen/vnc.Connect speaks it); closing it stops that desktop. uid is as
// for DialBrowser. ctx bounds the dial and the desktop's start only.
func DialDesktop(ctx context.Context, socket string, uid, w, h int, argv []string) (net.Conn, error) {
	req := fmt.Sprintf("VNC %dx%d", w, h)
	if len(argv) > 0 {
		b, err := json.Marshal(argv)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", req, err)
		}
		req += " " + string(b)
	}
	c, _, err := request(ctx, socket, req, uid)
	return c, err
}

// PutFile sends the size bytes of r to the agent at socket, which writes
// them to a file name (a base name) in a new directory inside the sandbox,
// and returns that file's path there: what a browser in the sandbox is
// handed to upload it. uid is as for DialBrowser. ctx bounds the whole
// transfer.
func PutFile(ctx context.Context, socket string, uid int, name string, size int64, r io.Reader) (string, error) {
	if strings.ContainsAny(name, "\n\r") {
		return "", fmt.Errorf("agent PUT: file name %q has a line break", name)
	}
	req := fmt.Sprintf("PUT %d %s", size, name)
	c, err := dial(ctx, socket, uid, req)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := answer(ctx, c, "PUT "+name); err != nil {
		return "", err // refused before any byte was sent
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	n, err := io.Copy(c, io.LimitReader(r, size))
	if err != nil {
		return "", fmt.Errorf("agent PUT %s: %w", name, errors.Join(err, ctx.Err()))
	}
	if n != size {
		return "", fmt.Errorf("agent PUT %s: the file has %d of the %d bytes it was said to have", name, n, size)
	}
	reply, err := answer(ctx, c, "PUT "+name)
	if err != nil {
		return "", err
	}
	path, ok := strings.CutPrefix(reply, "path=")
	if !ok || path == "" {
		return "", fmt.Errorf("agent PUT %s: %w: answer %q", name, ErrAgent, clip(reply))
	}
	return path, nil
}

// Ping asks the agent at socket whether it serves, and returns its status
// line ("browsers=N"). uid is as for DialBrowser.
func Ping(ctx context.Context, socket string, uid int) (string, error) {
	c, reply, err := request(ctx, socket, "PING", uid)
	if err != nil {
		return "", err
	}
	c.Close()
	return reply, nil
}

// request sends one request line and reads the agent's answer. On success
// it returns the connection, positioned after the answer.
func request(ctx context.Context, socket, req string, uid int) (net.Conn, string, error) {
	c, err := dial(ctx, socket, uid, req)
	if err != nil {
		return nil, "", err
	}
	ans, err := answer(ctx, c, req)
	if err != nil {
		c.Close()
		return nil, "", err
	}
	return c, ans, nil
}

// dial connects to the agent at socket, checks who serves it (unless uid
// is negative) and sends the request line req.
func dial(ctx context.Context, socket string, uid int, req string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", req, err)
	}
	if uid >= 0 {
		if err := checkPeer(c, uid); err != nil {
			c.Close()
			return nil, fmt.Errorf("agent %s at %s: %w", req, socket, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := fmt.Fprintf(c, "%s\n", req); err != nil {
		c.Close()
		return nil, fmt.Errorf("agent %s: %w", req, errors.Join(err, ctx.Err()))
	}
	return c, nil
}

// answer reads the agent's answer line to req from c and returns what
// follows "OK", or an error wrapping ErrAgent with what follows "ERR".
func answer(ctx context.Context, c net.Conn, req string) (string, error) {
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	// Read the answer a byte at a time, so that nothing after it is
	// buffered away from the caller.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 4096 {
		if _, err := c.Read(b); err != nil {
			stop()
			return "", fmt.Errorf("agent %s: no answer: %w", req, errors.Join(err, ctx.Err()))
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	if !stop() {
		return "", fmt.Errorf("agent %s: %w", req, ctx.Err())
	}
	ans := string(line)
	if rest, ok := strings.CutPrefix(ans, "OK"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("agent %s: %w: %s", req, ErrAgent, strings.TrimSpace(strings.TrimPrefix(ans, "ERR")))
}

// checkPeer makes sure the process at the other end of c runs as uid.
func checkPeer(c net.Conn, uid int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ErrPeer
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("%w (it runs as uid %d, not %d)", ErrPeer, cred.Uid, uid)
	}
	return nil
}
