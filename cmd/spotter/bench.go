package main

import (
	"context"
	"errors"
	"io"
)

// benchCmd runs `spotter bench`. Not built yet.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exitError{2, errors.New("bench: not built yet")}
}
