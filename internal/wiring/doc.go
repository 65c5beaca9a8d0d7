// Package wiring turns a spec (a task file, a session's spec, a batch job,
// an MCP server's flags) into the parts a run needs: a model (NewModel,
// NewTaskModel: the one switch over providers, with CodecFor for the
// executor API's wire formats) and a display (OpenDisplay: the one switch
// over display backends, chromium, vnc, desktop and playwright, on the host
// or in a sandbox of Sandboxes). Every entry point of the binary builds its
// model and display here, so that a backend or a provider reachable from
// one door is reachable from all of them.
package wiring
