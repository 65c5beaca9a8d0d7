package fieldsite

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestServesAndRecords(t *testing.T) {
	s := New(t, "/login.html", "<p>page</p>")
	r, err := http.Get(s.URL + "/login.html")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != "<p>page</p>" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET = %q (%q), want the page, not cached", b, r.Header.Get("Cache-Control"))
	}
	for _, v := range []string{"h", "hu"} {
		r, err := http.Post(s.URL+"/typed", "text/plain", strings.NewReader(v))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	if got := s.Received(); !slices.Equal(got, []string{"h", "hu"}) {
		t.Errorf("Received() = %q", got)
	}
	if r, err := http.Get(s.URL + "/other"); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other = %v, %v; want 404", r.StatusCode, err)
	}
}
