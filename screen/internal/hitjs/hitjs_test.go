package hitjs

import (
	"strings"
	"testing"
)

// Expr calls the script with its arguments in a form JavaScript reads
// back exactly: a quoted mode, and coordinates without exponents.
func TestExpr(t *testing.T) {
	e := Expr(`po"int`, 0.5, 1234567)
	if !strings.HasPrefix(e, "(function (mode, x, y) {") || !strings.HasSuffix(e, `)("po\"int",0.5,1234567)`) {
		t.Errorf("Expr = %.60s...%s", e, e[len(e)-40:])
	}
}
