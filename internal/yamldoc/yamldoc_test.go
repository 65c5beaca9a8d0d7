package yamldoc

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type color string

// UnmarshalYAML accepts red and blue, and says so in its error as our
// own types do (with the line, which Decode drops).
func (c *color) UnmarshalYAML(n *yaml.Node) error {
	if n.Value != "red" && n.Value != "blue" {
		return fmt.Errorf("line %d: color %q: want red or blue", n.Line, n.Value)
	}
	*c = color(n.Value)
	return nil
}

type action struct {
	Type string  `yaml:"type"`
	X    float64 `yaml:"x"`
	Y    float64 `yaml:"y"`
}

type base struct {
	Name string `yaml:"name"`
}

type doc struct {
	base    `yaml:",inline"`
	Timeout time.Duration     `yaml:"timeout"`
	Steps   int               `yaml:"max_steps"`
	Color   color             `yaml:"color"`
	Tags    map[string]string `yaml:"tags"`
	Model   struct {
		Turns []struct {
			Say     string   `yaml:"say"`
			Actions []action `yaml:"actions"`
		} `yaml:"turns"`
	} `yaml:"model"`
	Secret *struct {
		On bool `yaml:"on"`
	} `yaml:"secret"`
	Any     any `yaml:"any"`
	skipped int
}

func TestDecode(t *testing.T) {
	good := `name: t
timeout: 90s
max_steps: 3
color: red
tags: {a: b}
model:
  turns:
    - say: hi
      actions: [{type: click, x: 1, y: 2}]
secret: {on: true}
any: [1, {x: y}]
`
	var d doc
	if err := Decode([]byte(good), &d); err != nil {
		t.Fatalf("Decode(good) = %v", err)
	}
	if d.Name != "t" || d.Timeout != 90*time.Second || d.Model.Turns[0].Actions[0].Y != 2 || !d.Secret.On || d.Color != "red" {
		t.Errorf("Decode(good) = %+v", d)
	}

	tests := []struct {
		name, in, want string
	}{
		{"unknown field at the top", "name: t\nnmae: u\n", "nmae (line 2): unknown field; the fields here are any, color, max_steps, model, name, secret, tags, timeout"},
		{"unknown field deep", "model:\n  turns:\n    - say: hi\n    - say: ho\n      actions:\n        - {type: click, x: 1, y: 2}\n        - {type: click, x: 1, z: 2}\n",
			"model.turns[1].actions[1].z (line 7): unknown field; the fields here are type, x, y"},
		{"a string for a number, deep", "model:\n  turns:\n    - {}\n    - {}\n    - actions: [{type: click, x: abc}]\n",
			`model.turns[2].actions[0].x (line 5): want a number, got "abc"`},
		{"a word for a whole number", "max_steps: many\n", `max_steps (line 1): want a whole number, got "many"`},
		{"a fraction for a whole number", "max_steps: 2.5\n", `max_steps (line 1): want a whole number, got "2.5"`},
		{"a duration without a unit", "timeout: 30\n", `timeout (line 1): want a duration such as 90s, 5m or 1h30m, got "30"`},
		{"a list for a duration", "timeout: [1s]\n", `timeout (line 1): want a duration such as 90s, 5m or 1h30m, got a list`},
		{"a mapping for text", "name: {a: b}\n", "name (line 1): want text, got a mapping"},
		{"a scalar for a list", "model: {turns: hi}\n", `model.turns (line 1): want a list, got "hi"`},
		{"a list for a struct", "model: [1]\n", "model (line 1): want a mapping of fields (turns), got a list"},
		{"a list for a map", "tags: [a]\n", "tags (line 1): want a mapping, got a list"},
		{"a type's own error", "color: green\n", `color (line 1): color "green": want red or blue`},
		{"a pointer's field", "secret: {on: maybe}\n", `secret.on (line 1): want true or false, got "maybe"`},
		{"the document is a list", "- a\n", "line 1: want a mapping of fields (any, color, max_steps, model, name, secret, tags, timeout), got a list"},
		{"two documents", "name: a\n---\nname: b\n", "want one YAML document, found several"},
		{"not YAML", "name: [\n", "not YAML: line 1: did not find expected node content"},
		{"JSON on one line has no line numbers", `{"model": {"turns": [{"actions": [{"type": "click", "x": "abc"}]}]}}`,
			`model.turns[0].actions[0].x: want a number, got "abc"`},
	}
	goType := regexp.MustCompile(`yamldoc\.|\bdoc\b|\[\]|float64|int\b|time\.Duration|!!`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := Decode([]byte(tt.in), &d)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Decode(%q) = %v, want %q", tt.in, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") || goType.MatchString(err.Error()) {
				t.Errorf("Decode(%q) = %q: want one line, no Go type", tt.in, err)
			}
		})
	}
	var d2 doc
	if err := Decode(nil, &d2); !errors.Is(err, ErrEmpty) {
		t.Errorf("Decode(empty) = %v, want ErrEmpty", err)
	}
	var e *Error
	if err := Decode([]byte("nmae: u\n"), &d2); !errors.As(err, &e) || e.Path != "nmae" || e.Line != 1 {
		t.Errorf("Decode(unknown field) = %#v, want an *Error at nmae, line 1", err)
	}
}
