// Package opsdoc reads the table of metric families in
// docs/OPERATIONS.md, which tests hold both to what a server exports
// (web) and to what the monitoring manifests query (deploy).
package opsdoc

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
)

// familyRow is a row of the table: | `spotter_...` | type | ...
var familyRow = regexp.MustCompile("(?m)^\\| `(spotter_[a-z_]+)` \\|")

// Families returns the metric families docs/OPERATIONS.md lists, read
// from the module's root.
func Families(root string) (map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "OPERATIONS.md"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range familyRow.FindAllSubmatch(b, -1) {
		out[string(m[1])] = true
	}
	if len(out) == 0 {
		return nil, errors.New("docs/OPERATIONS.md lists no metric family (rows starting | `spotter_...` |)")
	}
	return out, nil
}
