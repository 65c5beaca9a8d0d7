// Package egress is the proxy through which a sandboxed browser reaches the
// network, and the only way it can: the sandbox's network namespace has
// nothing but loopback, and its browser is told to use this proxy, which
// Spotter runs outside the sandbox.
//
// A [Proxy] serves HTTP forward-proxy requests: plain HTTP in absolute form,
// and CONNECT tunnels for HTTPS and WebSockets. It checks each request's host
// and port against the session's [Policy] (an allowlist and a denylist),
// refuses internal addresses that the allowlist does not name exactly, logs
// every decision and hands it to a callback, so that a trace can record it.
// A refused plain-HTTP request gets a page the model can read: "spotter
// egress: evil.test is not in this session's allowlist". A refused CONNECT
// gets the same 403 response, which Chromium shows as its own tunnel error
// page (ERR_TUNNEL_CONNECTION_FAILED); the decision callback has the reason.
package egress
