package chat

import (
	"slices"

	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

// countImages counts the image parts of msgs.
func countImages(msgs []message) int {
	n := 0
	for _, msg := range msgs {
		for _, p := range msg.parts {
			if p.image != "" {
				n++
			}
		}
	}
	return n
}

// replaceImages returns msgs with the oldest of their images replaced by
// the placeholder text, as win and policy say (ctxpolicy.Window.Replace).
// msgs itself is not changed.
func replaceImages(msgs []message, win ctxpolicy.Window, policy ctxpolicy.Policy) []message {
	k := win.Replace(policy, countImages(msgs))
	if k == 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := range out {
		if k == 0 {
			break
		}
		if !slices.ContainsFunc(out[i].parts, func(p part) bool { return p.image != "" }) {
			continue
		}
		parts := slices.Clone(out[i].parts)
		for j := range parts {
			if k > 0 && parts[j].image != "" {
				parts[j] = part{text: ctxpolicy.Placeholder}
				k--
			}
		}
		out[i].parts = parts
	}
	return out
}
