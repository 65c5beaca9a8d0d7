package trace

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"testing"
)

// FuzzRead checks that any file decodes without a panic into complete
// events, ErrTruncated with the events before the cut, or ErrCorrupt, and
// that every event it returns can be written again.
func FuzzRead(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := decode(data, "fuzz")
		switch {
		case err == nil, errors.Is(err, ErrTruncated):
		case errors.Is(err, ErrCorrupt):
			if evs != nil {
				t.Fatalf("decode(%q) = %d events and %v, want no events with ErrCorrupt", data, len(evs), err)
			}
		default:
			t.Fatalf("decode(%q) error = %v, want nil, ErrTruncated or ErrCorrupt", data, err)
		}
		for _, e := range evs {
			if _, err := json.Marshal(e); err != nil {
				t.Errorf("json.Marshal(event %d read from %q) = %v", e.Seq, data, err)
			}
		}
	})
}

// FuzzReport checks that any trace Read accepts renders without an error.
func FuzzReport(f *testing.F) {
	addSeeds(f)
	img := page(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _ := decode(data, "fuzz")
		r := buildReport(evs, func(rel string) ([]byte, error) {
			if rel == "shots/f1.png" {
				return img, nil
			}
			return nil, fs.ErrNotExist
		})
		if err := reportTmpl.Execute(io.Discard, r); err != nil {
			t.Errorf("rendering the report of %q = %v", data, err)
		}
	})
}

func addSeeds(f *testing.F) {
	whole := `{"seq":1,"time":"2026-03-01T12:00:00Z","type":"run_start","task":"t","frame":{"id":"f1","time":"2026-03-01T12:00:00Z","viewport":{"w":1280,"h":800},"dpr":2,"clip":{"min":{"x":0,"y":0},"max":{"x":1280,"y":800}},"capture":{"w":2560,"h":1600},"sent":{"w":1024,"h":640},"format":"png","settle":{"waited":0}},"shot":"shots/f1.png"}` + "\n" +
		`{"seq":2,"time":"2026-03-01T12:00:01Z","type":"action","step":1,"call_id":"c","action":{"kind":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]},"mapped":{"kind":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]},"elapsed_ms":12.5}` + "\n"
	f.Add([]byte(whole))
	f.Add([]byte(whole[:len(whole)-40]))
	f.Add([]byte(whole + "garbage\n" + whole))
	f.Add([]byte(`{"seq":1,"type":"call","space":{"kind":1,"grid":1000},"raw":{"a":[1,2]}}`))
	f.Add([]byte(`{"elapsed_ms":1e18}` + "\n"))
	f.Add([]byte("\n\n\r\n"))
}
