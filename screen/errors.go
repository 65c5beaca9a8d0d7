package screen

import "errors"

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrOutOfBounds marks a model coordinate outside the image it was
	// given. It is never silently clamped from far away.
	ErrOutOfBounds = errors.New("coordinate outside the screenshot")
	// ErrGone marks a display whose browser or desktop has died or been
	// closed. A session can start a new one.
	ErrGone = errors.New("display is gone")
	// ErrUnsupported marks an action a display cannot perform.
	ErrUnsupported = errors.New("not supported by this display")
)
