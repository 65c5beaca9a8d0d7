package gemini

import (
	"maps"
	"slices"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

// This file applies Config.Context (package ctxpolicy) to the
// conversation: which screenshots go in full and which are replaced.

// seen records the images of fr, the function response to call p with r,
// in w, and returns fr as it is to be sent: a screenshot identical to the
// last one sent is left out, and the response's notes say that the screen
// did not change. fr itself is not changed.
func seen(fr *genai.FunctionResponse, p pending, r harness.Result, policy ctxpolicy.Policy, w *ctxpolicy.Window) *genai.FunctionResponse {
	if p.client {
		return fr
	}
	if r.Shot != nil && !w.Shot(policy, r.Shot.Data) {
		// functionResponse puts the screenshot first, then any zoom.
		out := *fr
		out.Parts = slices.Clone(fr.Parts[1:])
		out.Response = maps.Clone(fr.Response)
		notes, _ := out.Response["notes"].([]any)
		out.Response["notes"] = append(slices.Clone(notes), ctxpolicy.Unchanged)
		fr = &out
	}
	if r.Zoom != nil {
		w.Image()
	}
	return fr
}

// countImages counts the images of the user contents of contents: inline
// screenshots and the images of function responses.
func countImages(contents []*genai.Content) int {
	n := 0
	for _, c := range contents {
		if c.Role != genai.RoleUser {
			continue
		}
		for _, p := range c.Parts {
			switch {
			case p == nil:
			case p.InlineData != nil:
				n++
			case p.FunctionResponse != nil:
				n += len(p.FunctionResponse.Parts)
			}
		}
	}
	return n
}

// replaceImages returns contents with the oldest of their images replaced
// as win and policy say (ctxpolicy.Window.Replace): an inline image
// becomes the placeholder text, a function response's image is left out
// and its response says "screenshot": the placeholder. Changed contents
// are copies; the others are shared.
func replaceImages(contents []*genai.Content, win ctxpolicy.Window, policy ctxpolicy.Policy) []*genai.Content {
	k := win.Replace(policy, countImages(contents))
	if k == 0 {
		return contents
	}
	out := slices.Clone(contents)
	for i, c := range out {
		if k == 0 {
			break
		}
		if c.Role != genai.RoleUser {
			continue
		}
		var parts []*genai.Part
		for j, p := range c.Parts {
			if k == 0 {
				break
			}
			var np *genai.Part
			switch {
			case p == nil:
			case p.InlineData != nil:
				np = &genai.Part{Text: ctxpolicy.Placeholder}
				k--
			case p.FunctionResponse != nil && len(p.FunctionResponse.Parts) > 0:
				fr := *p.FunctionResponse
				drop := min(k, len(fr.Parts))
				fr.Parts = slices.Clone(fr.Parts[drop:])
				fr.Response = maps.Clone(fr.Response)
				if fr.Response == nil {
					fr.Response = map[string]any{}
				}
				fr.Response["screenshot"] = ctxpolicy.Placeholder
				cp := *p
				cp.FunctionResponse = &fr
				np = &cp
				k -= drop
			}
			if np != nil {
				if parts == nil {
					parts = slices.Clone(c.Parts)
				}
				parts[j] = np
			}
		}
		if parts != nil {
			nc := *c
			nc.Parts = parts
			out[i] = &nc
		}
	}
	return out
}
