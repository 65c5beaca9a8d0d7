package harness_test

import (
	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/harness/script"
)

func parseTurns(s string) ([]script.Turn, error) {
	var turns []script.Turn
	err := yaml.Unmarshal([]byte(s), &turns)
	return turns, err
}
