package session

import (
	"encoding/json"

	"github.com/spotter-harness/spotter/screen"
)

// The session's state (savedState) is written with every record of a
// call, twice per call, and most of it does not change from one call to
// the next: the latest frames the model was sent and an executor
// session's latest answered calls, 14-15 KB of the 15 KB of a busy
// executor session. Each of those is encoded once, and the state's JSON
// is the rest of the state encoded, with the kept encodings of the frames
// and the calls joined to it: the same JSON, field order aside.

// stateJSON returns s.saved encoded; an executor session's answered calls
// come from s.exec (savedState.Exec is read at a restart only). s.mu is
// held.
func (s *Session) stateJSON() ([]byte, error) {
	rest := s.saved
	rest.Frames = nil
	var exec [][]byte
	if s.exec != nil {
		rest.Exec = nil
		var err error
		if exec, err = s.exec.recordsJSON(); err != nil {
			return nil, err
		}
	}
	head, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	frames, err := s.framesJSON()
	if err != nil {
		return nil, err
	}
	out := head[:len(head)-1] // without its closing brace
	out = appendArray(out, "frames", frames)
	out = appendArray(out, "exec", exec)
	return append(out, '}'), nil
}

// appendArray appends ,"name":[items...] to obj, an object without its
// closing brace; nothing when there are no items (the fields are
// omitempty).
func appendArray(obj []byte, name string, items [][]byte) []byte {
	if len(items) == 0 {
		return obj
	}
	if len(obj) > 1 { // more than the opening brace
		obj = append(obj, ',')
	}
	obj = append(obj, '"')
	obj = append(obj, name...)
	obj = append(obj, `":[`...)
	for i, it := range items {
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = append(obj, it...)
	}
	return append(obj, ']')
}

// framesJSON returns the encoding of each of s.saved.Frames, encoding the
// ones not seen before. A Frame is comparable and encodes the same way
// whenever it is equal, so it keys its own encoding. s.mu is held.
func (s *Session) framesJSON() ([][]byte, error) {
	out := make([][]byte, 0, len(s.saved.Frames))
	for _, f := range s.saved.Frames {
		b, ok := s.frameJSON[f]
		if !ok {
			var err error
			if b, err = json.Marshal(f); err != nil {
				return nil, err
			}
			if s.frameJSON == nil {
				s.frameJSON = map[screen.Frame][]byte{}
			}
			s.frameJSON[f] = b
		}
		out = append(out, b)
	}
	if len(s.frameJSON) > 2*maxFrames {
		// Keep the encodings of the frames still saved only.
		kept := make(map[screen.Frame][]byte, len(s.saved.Frames))
		for _, f := range s.saved.Frames {
			kept[f] = s.frameJSON[f]
		}
		s.frameJSON = kept
	}
	return out, nil
}
