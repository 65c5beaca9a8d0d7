package screen

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
)

// What the browser backends (screen/cdp, screen/playwright) say and do
// alike about dialogs, file choosers and a page that cannot be drawn.

// String names the dialog and what it says.
func (d Dialog) String() string {
	return fmt.Sprintf("a JavaScript %s dialog (%q)", d.Type, d.Message)
}

// Note tells a model that the dialog is open and how to answer it.
func (d Dialog) Note() string {
	switch d.Type {
	case "alert":
		return fmt.Sprintf("%s is open and blocks the page; answer it with the dialog action (accept: true).", d)
	case "prompt":
		return fmt.Sprintf("%s is open and blocks the page (default answer %q); answer it with the dialog action: accept with text, or dismiss.",
			d, d.DefaultPrompt)
	case "beforeunload":
		return fmt.Sprintf("%s is open: the page asks whether to leave it. Answer with the dialog action: accept leaves the page, dismiss stays.", d)
	}
	return fmt.Sprintf("%s is open and blocks the page; answer it with the dialog action (accept: true for OK, false for Cancel).", d)
}

// ChooserNote tells a model that a file chooser is open, taking one file
// or, when multiple, several.
func ChooserNote(multiple bool) string {
	n := "one file"
	if multiple {
		n = "one or more files"
	}
	return fmt.Sprintf("A file chooser is open (%s). Answer it with the upload action, naming files this session makes available.", n)
}

// UploadPaths resolves the files an upload action names: relative ones
// against dir (when set), each made absolute and required to be a regular
// file, with an error in words for the model otherwise.
func UploadPaths(files []string, dir string) ([]string, error) {
	abs := make([]string, 0, len(files))
	for _, f := range files {
		p := f
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("file %q: %v", f, err)
		}
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("file %q not found", f)
		case err != nil:
			return nil, fmt.Errorf("file %q: %v", f, err)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("file %q is not a regular file", f)
		}
		abs = append(abs, p)
	}
	return abs, nil
}

// BlankImage encodes a white image of size s, what a capture shows when a
// page cannot be drawn (a dialog blocks it before it drew anything).
func BlankImage(s Size, f Format, quality int) ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, s.W, s.H))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var b bytes.Buffer
	var err error
	if f == JPEG {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: quality})
	} else {
		err = png.Encode(&b, img)
	}
	return b.Bytes(), err
}
