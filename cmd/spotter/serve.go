package main

import (
	"context"
	"errors"
	"io"
)

// serveCmd runs `spotter serve`. Not built yet.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exitError{2, errors.New("serve: not built yet")}
}
