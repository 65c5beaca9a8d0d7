// Package yamldoc decodes the YAML files people write (task files, batch
// jobs, QA test files, approval rules, policies) strictly, with errors in
// their words: each names the place in the document by its path
// (model.turns[2].say) and line, and what was wanted there ("a number",
// "one of the fields name, task, ..."), never a Go type.
package yamldoc

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ErrEmpty is Decode's error for a document with nothing in it.
var ErrEmpty = errors.New("the document is empty")

// Error is a value that does not fit its place in the document.
type Error struct {
	Path string // "model.turns[2].say"; "" for the document itself
	Line int    // 1-based; 0 when unknown
	Msg  string // what is wrong, in words
}

func (e *Error) Error() string {
	where := e.Path
	switch {
	case where != "" && e.Line > 0:
		where += " (line " + strconv.Itoa(e.Line) + ")"
	case where == "" && e.Line > 0:
		where = "line " + strconv.Itoa(e.Line)
	}
	if where == "" {
		return e.Msg
	}
	return where + ": " + e.Msg
}

// Decode decodes the one YAML (or JSON) document in b into v, a pointer,
// rejecting fields v's type does not have. An empty document is ErrEmpty
// and leaves v alone; several documents are an error. Errors are *Error
// or, for YAML that does not parse, the parser's words without its
// package's prefix. A JSON object on one line (a batch job) gets no line
// numbers: its paths say where.
func Decode(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return ErrEmpty
	} else if err != nil {
		return syntaxError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return errors.New("want one YAML document, found several")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err := check(root, reflect.TypeOf(v).Elem(), ""); err != nil {
		var e *Error
		if one := bytes.TrimSpace(b); errors.As(err, &e) && bytes.HasPrefix(one, []byte("{")) && !bytes.Contains(one, []byte("\n")) {
			e.Line = 0 // one line (a JSON object): its path says more
		}
		return err
	}
	strict := yaml.NewDecoder(bytes.NewReader(b))
	strict.KnownFields(true)
	if err := strict.Decode(v); err != nil {
		// check let through what the decoder refuses: say it without
		// the decoder's Go types.
		return &Error{Msg: words(err)}
	}
	return nil
}

// words is a decoder's error on one line, without yaml.v3's prefixes,
// line numbers (the Error has its own) or Go types.
func words(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(lineNo.ReplaceAllString(l, "")); l != "" {
			parts = append(parts, goTypes.ReplaceAllString(l, ""))
		}
	}
	return strings.Join(parts, "; ")
}

// lineNo matches the line number yaml.v3 and our own unmarshalers put
// before an error.
var lineNo = regexp.MustCompile(`^\s*line \d+: `)

// syntaxError is the parser's error without its "yaml: " prefix.
func syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	return &Error{Msg: "not YAML: " + goTypes.ReplaceAllString(msg, "")}
}

// goTypes matches the parts of yaml.v3's messages that name Go types.
var goTypes = regexp.MustCompile(` (in|into) (type )?[\w.*\[\]]+`)

var (
	unmarshaler     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// check walks node against t, the type it decodes into, and returns the
// first place where it does not fit.
func check(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // a null leaves the field at its zero value
	}
	bad := func(format string, args ...any) error {
		return &Error{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
	}
	// Types that decode themselves: decode the node alone.
	if reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) || t == durationType {
		if t == durationType {
			if _, err := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || err != nil {
				return bad("want a duration such as 90s, 5m or 1h30m, got %s", shown(n))
			}
			return nil
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return bad("%s", words(err))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(n, t.Elem(), path)
	case reflect.Interface:
		return nil
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of fields (%s), got %s", strings.Join(fieldNames(t), ", "), shown(n))
		}
		fields, rest := structFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge key: its mapping's fields are this one's
				if err := check(val, t, path); err != nil {
					return err
				}
				continue
			}
			sub := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				if rest != nil {
					if err := check(val, rest.Elem(), sub); err != nil {
						return err
					}
					continue
				}
				return &Error{Path: sub, Line: k.Line, Msg: "unknown field; " + known(t)}
			}
			if err := check(val, f, sub); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping, got %s", shown(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if err := check(k, t.Key(), join(path, k.Value)); err != nil {
				return err
			}
			if err := check(val, t.Elem(), join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		if t.Elem() == reflect.TypeFor[byte]() && n.Kind == yaml.ScalarNode {
			return nil // bytes from a string
		}
		if n.Kind != yaml.SequenceNode {
			return bad("want a list, got %s", shown(n))
		}
		for i, item := range n.Content {
			if err := check(item, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	}
	// A scalar.
	want := map[reflect.Kind]string{reflect.Bool: "true or false", reflect.String: "text",
		reflect.Float32: "a number", reflect.Float64: "a number"}[t.Kind()]
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		want = "a whole number, 0 or more"
	}
	if want == "" {
		want = "a value of another kind"
	}
	if n.Kind != yaml.ScalarNode {
		return bad("want %s, got %s", want, shown(n))
	}
	whole := strings.HasPrefix(want, "a whole number")
	if whole && n.ShortTag() != "!!int" { // yaml.v3 would cut 2.5 to 2
		return bad("want %s, got %s", want, shown(n))
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		return bad("want %s, got %s", want, shown(n))
	}
	return nil
}

// structFields maps the YAML keys of struct type t (its inline structs'
// included) to their types; rest is the type of an inline map that takes
// the other keys, if t has one.
func structFields(t reflect.Type) (map[string]reflect.Type, reflect.Type) {
	out := map[string]reflect.Type{}
	var rest reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				in, r := structFields(ft)
				for k, v := range in {
					out[k] = v
				}
				if r != nil {
					rest = r
				}
			case reflect.Map:
				rest = ft
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out, rest
}

func fieldNames(t reflect.Type) []string {
	fields, _ := structFields(t)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// known lists the fields of t for an error.
func known(t reflect.Type) string {
	names := fieldNames(t)
	if len(names) == 1 {
		return "the only field here is " + names[0]
	}
	return "the fields here are " + strings.Join(names, ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shown describes a node for an error: a scalar quoted and clipped, or
// its kind.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:40]) + "…"
	}
	return strconv.Quote(v)
}
