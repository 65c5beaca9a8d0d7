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
	"strings"
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

// A File is a file as a page sees it in a file input: its name and size.
type File struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// FilesOf returns the names and sizes of the files at paths (as UploadPaths
// returns them), which an upload hands to a page.
func FilesOf(paths []string) ([]File, error) {
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("file %q: %v", filepath.Base(p), err)
		}
		out = append(out, File{Name: filepath.Base(p), Size: fi.Size()})
	}
	return out, nil
}

// UploadResult says what an upload did, from what the page's file input
// holds afterwards (got): a note naming the files the page received, or an
// error when it holds other files than those sent (want). known is false
// when the page could not be asked (a chooser of no file input): the note
// then says that nothing confirmed it.
func UploadResult(want, got []File, known bool) (string, error) {
	if !known {
		return fmt.Sprintf("%s handed to the file chooser; the page has no file input that could confirm it received them.", listFiles(want)), nil
	}
	if len(got) == len(want) {
		same := true
		for i := range want {
			same = same && got[i] == want[i]
		}
		if same {
			return fmt.Sprintf("The page's file input now holds %s.", listFiles(got)), nil
		}
	}
	if len(got) == 0 {
		return "", fmt.Errorf("%s handed to the file chooser, but the page's file input holds no file", listFiles(want))
	}
	return "", fmt.Errorf("%s handed to the file chooser, but the page's file input holds %s", listFiles(want), listFiles(got))
}

// listFiles names files with their sizes: "a.txt (13 bytes), b.png (2 bytes)".
func listFiles(files []File) string {
	s := make([]string, len(files))
	for i, f := range files {
		s[i] = fmt.Sprintf("%s (%d bytes)", f.Name, f.Size)
	}
	return strings.Join(s, ", ")
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
