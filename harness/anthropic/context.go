package anthropic

import (
	"slices"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/screen"
)

// This file applies Config.Context (package ctxpolicy) to the conversation:
// which screenshots go in full, which are replaced by a placeholder, and
// where the prompt-cache breakpoints go.

// seen records the image that the tool_result for r will carry, if any, in
// w, and returns r as it is to be encoded: a full screenshot identical to
// the last one sent becomes the words ctxpolicy.Unchanged (with the
// screenshot's events) instead of an image. A screenshot that could not be
// sent is an error, even if it is the same as the last.
func seen(p pendingCall, r harness.Result, policy ctxpolicy.Policy, w *ctxpolicy.Window, display screen.Size) (harness.Result, error) {
	// toolResult attaches an image only if the call may have acted, and
	// then the zoom crop in place of the screenshot.
	if p.client || !r.MayHaveActed() {
		return r, nil
	}
	switch {
	case r.Zoom != nil:
		w.Image()
	case r.Shot != nil:
		if err := checkShot(r.Shot, true, display); err != nil {
			return r, err
		}
		if w.Shot(policy, r.Shot.Data) {
			return r, nil
		}
		notes := slices.Clone(r.Notes)
		for _, e := range r.Shot.Events {
			if !slices.Contains(notes, e) {
				notes = append(notes, e)
			}
		}
		r.Notes, r.Shot = append(notes, ctxpolicy.Unchanged), nil
	}
	return r, nil
}

// countImages counts the image blocks of msgs: screenshots sent with the
// task and in tool results.
func countImages(msgs []anthropic.BetaMessageParam) int {
	n := 0
	for _, msg := range msgs {
		for _, b := range msg.Content {
			switch {
			case b.OfImage != nil:
				n++
			case b.OfToolResult != nil:
				for _, c := range b.OfToolResult.Content {
					if c.OfImage != nil {
						n++
					}
				}
			}
		}
	}
	return n
}

// replaceImages returns msgs with its k oldest image blocks replaced by
// the placeholder text. msgs itself is not changed.
func replaceImages(msgs []anthropic.BetaMessageParam, k int) []anthropic.BetaMessageParam {
	if k <= 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := range out {
		if k == 0 {
			break
		}
		var content []anthropic.BetaContentBlockParamUnion
		for j, b := range out[i].Content {
			if k == 0 {
				break
			}
			switch {
			case b.OfImage != nil:
				if content == nil {
					content = slices.Clone(out[i].Content)
				}
				content[j] = anthropic.NewBetaTextBlock(ctxpolicy.Placeholder)
				k--
			case b.OfToolResult != nil && slices.ContainsFunc(b.OfToolResult.Content, isImage):
				tr := *b.OfToolResult
				tr.Content = slices.Clone(tr.Content)
				for c := range tr.Content {
					if k > 0 && tr.Content[c].OfImage != nil {
						tr.Content[c] = anthropic.BetaToolResultBlockParamContentUnion{
							OfText: &anthropic.BetaTextBlockParam{Text: ctxpolicy.Placeholder}}
						k--
					}
				}
				if content == nil {
					content = slices.Clone(out[i].Content)
				}
				content[j] = anthropic.BetaContentBlockParamUnion{OfToolResult: &tr}
			}
		}
		if content != nil {
			out[i].Content = content
		}
	}
	return out
}

func isImage(c anthropic.BetaToolResultBlockParamContentUnion) bool { return c.OfImage != nil }

// hasImage reports whether a top-level block is or holds an image.
func hasImage(b anthropic.BetaContentBlockParamUnion) bool {
	return b.OfImage != nil || (b.OfToolResult != nil && slices.ContainsFunc(b.OfToolResult.Content, isImage))
}

// cacheBreakpoints returns msgs with the conversation's cache breakpoints
// (the tools and the system prompt have their own):
//
//   - on the last block of the last user message, so that the next request,
//     which starts with this whole conversation, reads it from the cache;
//   - if images have been replaced (replaced), on the block just before the
//     oldest image still sent. Between two replacements that prefix does
//     not change, and when the next chunk is replaced it is the longest
//     prefix that is still the same, so the request reads it from the
//     cache and writes only what follows.
//
// That makes four breakpoints with the tools' and the system prompt's, the
// API's limit. msgs itself is not changed.
func cacheBreakpoints(msgs []anthropic.BetaMessageParam, replaced bool) []anthropic.BetaMessageParam {
	type at struct{ msg, block int }
	var marks []at
	if replaced {
	find:
		for i, msg := range msgs {
			for j, b := range msg.Content {
				if !hasImage(b) {
					continue
				}
				switch {
				case j > 0:
					marks = append(marks, at{i, j - 1})
				case i > 0 && len(msgs[i-1].Content) > 0:
					marks = append(marks, at{i - 1, len(msgs[i-1].Content) - 1})
				}
				break find
			}
		}
	}
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Role != anthropic.BetaMessageParamRoleUser {
		last--
	}
	if last >= 0 && len(msgs[last].Content) > 0 {
		if m := (at{last, len(msgs[last].Content) - 1}); !slices.Contains(marks, m) {
			marks = append(marks, m)
		}
	}
	if len(marks) == 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	for _, m := range marks {
		b, ok := withCacheControl(out[m.msg].Content[m.block])
		if !ok {
			continue
		}
		content := slices.Clone(out[m.msg].Content)
		content[m.block] = b
		out[m.msg].Content = content
	}
	return out
}

// withCacheControl returns b with a cache breakpoint, if b is a kind of
// block that takes one.
func withCacheControl(b anthropic.BetaContentBlockParamUnion) (anthropic.BetaContentBlockParamUnion, bool) {
	cc := anthropic.NewBetaCacheControlEphemeralParam()
	switch {
	case b.OfToolResult != nil:
		c := *b.OfToolResult
		c.CacheControl = cc
		return anthropic.BetaContentBlockParamUnion{OfToolResult: &c}, true
	case b.OfText != nil:
		c := *b.OfText
		c.CacheControl = cc
		return anthropic.BetaContentBlockParamUnion{OfText: &c}, true
	case b.OfImage != nil:
		c := *b.OfImage
		c.CacheControl = cc
		return anthropic.BetaContentBlockParamUnion{OfImage: &c}, true
	case b.OfToolUse != nil:
		c := *b.OfToolUse
		c.CacheControl = cc
		return anthropic.BetaContentBlockParamUnion{OfToolUse: &c}, true
	}
	return b, false
}
