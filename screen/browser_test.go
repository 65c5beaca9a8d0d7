package screen

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDialogWords(t *testing.T) {
	for _, tt := range []struct {
		d    Dialog
		want string
	}{
		{Dialog{Type: "alert", Message: "Saved"}, `a JavaScript alert dialog ("Saved") is open and blocks the page; answer it with the dialog action (accept: true).`},
		{Dialog{Type: "prompt", Message: "Name?", DefaultPrompt: "ann"}, `(default answer "ann")`},
		{Dialog{Type: "beforeunload"}, "accept leaves the page, dismiss stays"},
		{Dialog{Type: "confirm", Message: "Delete?"}, "accept: true for OK, false for Cancel"},
	} {
		if got := tt.d.Note(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v.Note() = %q, want it to contain %q", tt.d, got, tt.want)
		}
	}
	if got := ChooserNote(true); !strings.Contains(got, "one or more files") {
		t.Errorf("ChooserNote(true) = %q", got)
	}
}

func TestUploadPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := UploadPaths([]string{"a.txt", filepath.Join(dir, "a.txt")}, dir)
	if err != nil || len(got) != 2 || got[0] != filepath.Join(dir, "a.txt") || got[1] != got[0] {
		t.Errorf("UploadPaths = %q, %v", got, err)
	}
	for files, want := range map[string]string{"missing.txt": "not found", ".": "not a regular file"} {
		if _, err := UploadPaths([]string{files}, dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("UploadPaths(%q) = %v, want %q", files, err, want)
		}
	}
}

func TestBlankImage(t *testing.T) {
	for _, f := range []Format{PNG, JPEG} {
		b, err := BlankImage(Size{W: 40, H: 30}, f, 80)
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() != 40 || img.Bounds().Dy() != 30 {
			t.Fatalf("BlankImage(%v) decodes to %v, %v", f, img, err)
		}
		if r, g, bl, _ := img.At(20, 15).RGBA(); r>>8 < 250 || g>>8 < 250 || bl>>8 < 250 {
			t.Errorf("BlankImage(%v) is not white: %d %d %d", f, r>>8, g>>8, bl>>8)
		}
	}
}
