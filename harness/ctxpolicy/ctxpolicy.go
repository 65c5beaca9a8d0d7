// Package ctxpolicy decides which screenshots a provider adapter sends to
// the model in full, for every adapter (harness/anthropic, harness/openai,
// harness/gemini, harness/chat). The adapters keep their conversations in
// their own wire shapes and ask this package what to do; none of them
// decides on its own.
//
// Three rules, all set by a Policy:
//
//   - Keep: the newest Keep images of the conversation are sent in full
//     (screenshots and zoom crops alike). Older ones are replaced by a short
//     placeholder (Placeholder), in place, so every call keeps its result
//     and the pairing of calls and results stays valid.
//   - Chunk: old images are replaced Chunk at a time, so the conversation
//     a request starts with stays byte-identical for Chunk turns in a row
//     and a provider's prompt cache keeps matching it; the number of full
//     images goes from Keep up to Keep+Chunk-1 and back.
//   - Repeats: a screenshot with the same bytes as the last full
//     screenshot sent means the screen did not change; it is not sent
//     again, and the result says so in words (Unchanged). Repeats turns
//     this off.
//
// Replacements only ever grow from the oldest image on, and depend only on
// how many images the conversation has held (Window.Images), so a
// conversation restored from saved state makes the same requests as the
// one that saved it.
package ctxpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Defaults of Policy. docs/PERFORMANCE.md ("Context: which screenshots
// the model is sent") has the measurement behind them.
const (
	DefaultKeep  = 3
	DefaultChunk = 5
	// DefaultChunkUncached is the default chunk where cached input costs
	// what uncached input does (a model on one's own server, a host with
	// no cache price): keeping old screenshots a few turns longer for the
	// cache's sake then only costs tokens (Policy.Uncached).
	DefaultChunkUncached = 1
)

// All, as Policy.Keep, sends every image in full on every request.
const All = -1

// Limits of Policy's fields.
const (
	MaxKeep  = 1000
	MaxChunk = 1000
)

// Placeholder stands for an image that is no longer sent. It never
// changes, so the requests that carry it keep matching a prompt cache.
const Placeholder = "[Older screenshot omitted; only the newest screenshots are kept.]"

// Unchanged is what a result says instead of sending a screenshot that is
// the same as the last one sent.
const Unchanged = "The screen did not change: the screenshot is identical to the previous one, so it is not sent again."

// Policy says which images a conversation sends in full. The zero Policy
// is the default: the newest DefaultKeep images in full, older ones
// replaced DefaultChunk at a time, an unchanged screenshot not sent again.
type Policy struct {
	// Keep is how many of the newest images are sent in full: 1 to
	// MaxKeep, All (-1) for every one, 0 for DefaultKeep.
	Keep int `json:"keep,omitempty" yaml:"keep"`
	// Chunk is how many old images are replaced at once: 1 to MaxChunk,
	// 0 for DefaultChunk. 1 replaces each image as soon as it is older
	// than the newest Keep, which changes the request's prefix on every
	// turn and defeats prompt caching.
	Chunk int `json:"chunk,omitempty" yaml:"chunk"`
	// Repeats sends a screenshot identical to the previous one again
	// instead of saying that the screen did not change.
	Repeats bool `json:"repeats,omitempty" yaml:"repeats"`
}

// Check says what is wrong with p, if anything.
func (p Policy) Check() error {
	switch {
	case p.Keep < All || p.Keep > MaxKeep:
		return fmt.Errorf("context: keep %d: want 1 to %d newest screenshots, 0 for the default (%d) or %d for all", p.Keep, MaxKeep, DefaultKeep, All)
	case p.Chunk < 0 || p.Chunk > MaxChunk:
		return fmt.Errorf("context: chunk %d: want 1 to %d screenshots replaced at a time, or 0 for the default (%d)", p.Chunk, MaxChunk, DefaultChunk)
	}
	return nil
}

// KeepAll reports whether p sends every image in full.
func (p Policy) KeepAll() bool { return p.Keep == All }

func (p Policy) keep() int {
	if p.Keep == 0 {
		return DefaultKeep
	}
	return p.Keep
}

func (p Policy) chunk() int {
	if p.Chunk <= 0 {
		return DefaultChunk
	}
	return p.Chunk
}

// Omitted returns how many of the oldest of n images are sent as
// placeholders: none until n exceeds Keep, then the excess rounded down to
// a whole number of chunks. It never decreases as n grows.
func (p Policy) Omitted(n int) int {
	if p.KeepAll() {
		return 0
	}
	over := n - p.keep()
	if over <= 0 {
		return 0
	}
	return over - over%p.chunk()
}

// Uncached returns p for a provider that bills cached input tokens like
// any other: a Chunk left to its default becomes DefaultChunkUncached.
func (p Policy) Uncached() Policy {
	if p.Chunk == 0 {
		p.Chunk = DefaultChunkUncached
	}
	return p
}

// Most returns the most images a request carries under p: Keep+Chunk-1
// (just before a chunk is replaced), or 0 for All, which has no bound.
func (p Policy) Most() int {
	if p.KeepAll() {
		return 0
	}
	return p.keep() + p.chunk() - 1
}

// Capped returns p for a server that takes at most limit images per
// request (0 or less: no limit): a Chunk left to its default is made
// small enough that Most() <= limit. A Keep or Chunk set explicitly that
// cannot fit is an error, and so is All with a limit.
func (p Policy) Capped(limit int) (Policy, error) {
	if limit <= 0 || (!p.KeepAll() && p.Most() <= limit) {
		return p, nil
	}
	switch {
	case p.KeepAll():
		return p, fmt.Errorf("context: keep all screenshots: the server takes at most %d images per request", limit)
	case p.keep() > limit:
		return p, fmt.Errorf("context: keep %d: the server takes at most %d images per request", p.keep(), limit)
	case p.Chunk != 0:
		return p, fmt.Errorf("context: keep %d and chunk %d make up to %d images per request; the server takes at most %d",
			p.keep(), p.Chunk, p.Most(), limit)
	}
	p.Chunk = limit - p.keep() + 1
	return p, nil
}

// String describes p for logs and reports.
func (p Policy) String() string {
	if p.KeepAll() {
		return "every screenshot"
	}
	s := fmt.Sprintf("newest %d screenshots, older ones replaced %d at a time", p.keep(), p.chunk())
	if p.Repeats {
		s += ", unchanged ones sent again"
	}
	return s
}

// Window is what a conversation must remember to apply a Policy: how many
// images it has held and the last full screenshot. It is plain data that
// adapters save with their state; its zero value is an empty conversation.
// Adapters change a copy while they build a request and keep it only when
// the request succeeds.
type Window struct {
	// Images counts the images the conversation has held, whether still
	// sent in full or already replaced by Placeholder.
	Images int `json:"images,omitempty"`
	// Last is the SHA-256 (hex) of the last full screenshot sent; empty
	// before the first.
	Last string `json:"last,omitempty"`
}

// Shot records a full screenshot with these bytes and reports whether it
// is to be sent: false means it is the same as the last one sent and p
// does not repeat it, so the adapter sends Unchanged in its place (and
// the screenshot does not count as an image).
func (w *Window) Shot(p Policy, data []byte) bool {
	h := sum(data)
	if h == w.Last && !p.Repeats {
		return false
	}
	w.Images++
	w.Last = h
	return true
}

// Full records a full screenshot that is sent whatever it shows, where
// the wire format has no room for the words (an OpenAI
// computer_call_output must hold an image, and the GA computer tool reads
// the display size from it).
func (w *Window) Full(data []byte) {
	w.Images++
	w.Last = sum(data)
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Image records an image that is not a full screenshot (a zoomed crop): it
// counts as an image but is never compared with the screen.
func (w *Window) Image() { w.Images++ }

// Replace returns how many of the images still present in a conversation
// (present, counted oldest first) are now to be replaced by Placeholder.
// Replaced images are always the oldest, so those present are the newest
// present of w.Images.
func (w Window) Replace(p Policy, present int) int {
	done := w.Images - present // replaced before
	return min(max(p.Omitted(w.Images)-done, 0), present)
}
