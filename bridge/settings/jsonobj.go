package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// object is a JSON object that remembers key order, so a rewrite changes only what the bridge meant to change.
// Values are *object, []any, string, json.Number, bool or nil.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// getObject returns the member k when it is an object (nil on a nil object).
func (o *object) getObject(k string) *object {
	if o == nil {
		return nil
	}
	v, _ := o.vals[k].(*object)
	return v
}

// set replaces k in place, or appends it.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// setLike replaces k in place; a new k goes after the nearest key that precedes it in order (the key order of
// the object it came from), so a restored field lands where it used to be.
func (o *object) setLike(k string, v any, order []string) {
	if _, ok := o.vals[k]; ok {
		o.vals[k] = v
		return
	}
	o.vals[k] = v
	at := 0
	if i := slices.Index(order, k); i >= 0 {
		for j := i - 1; j >= 0; j-- {
			if p := slices.Index(o.keys, order[j]); p >= 0 {
				at = p + 1
				break
			}
		}
	} else {
		at = len(o.keys)
	}
	o.keys = slices.Insert(o.keys, at, k)
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(s string) bool { return s == k })
}

// errNotObject says the file parsed as JSON but is not an object.
var errNotObject = errors.New("top level is not a JSON object")

// maxDepth bounds how deeply objects and arrays nest in a settings document. A providers.json
// nests six levels (providers.<id>.settings.auth.metadata.userInfo); a run's copy of 4 MiB of "["
// must not overflow the stack of the server that reads it.
const maxDepth = 256

// errTooDeep is a document nested deeper than maxDepth.
var errTooDeep = fmt.Errorf("nested deeper than %d levels", maxDepth)

// parseObject parses a whole document whose top level must be an object. It is the only JSON
// reader of settings files and copies: a document over maxFileSize or nested deeper than maxDepth
// is refused before anything is built from it. Errors carry offsets, never content.
func parseObject(data []byte) (*object, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("over the %d byte limit", maxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 1)
	if errors.Is(err, errTooDeep) {
		return nil, fmt.Errorf("invalid JSON: %w (near byte %d)", err, dec.InputOffset())
	}
	if err != nil {
		return nil, fmt.Errorf("invalid JSON near byte %d", dec.InputOffset())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid JSON: trailing data at byte %d", dec.InputOffset())
	}
	o, ok := v.(*object)
	if !ok {
		return nil, errNotObject
	}
	return o, nil
}

// parseValue reads one value whose containers sit at depth (the top level is 1).
func parseValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth > maxDepth {
			return nil, errTooDeep
		}
		switch t {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(k, v) // a duplicate key keeps its first position and its last value, like JSON.parse
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, errors.New("unexpected delimiter")
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

// encode writes o the way the CLI does (JSON.stringify(v, null, 2) + "\n").
func (o *object) encode() []byte {
	var b bytes.Buffer
	writeValue(&b, o, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func writeValue(b *bytes.Buffer, v any, depth int) {
	switch t := v.(type) {
	case *object:
		if len(t.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			indent(b, depth+1)
			writeString(b, k)
			b.WriteString(": ")
			writeValue(b, t.vals[k], depth+1)
			if i < len(t.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		indent(b, depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range t {
			indent(b, depth+1)
			writeValue(b, e, depth+1)
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		indent(b, depth)
		b.WriteByte(']')
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("settings: unexpected JSON value %T", v))
	}
}

func indent(b *bytes.Buffer, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}

// writeString escapes like JSON.stringify: quote, backslash and control characters only.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else if r == utf8.RuneError {
				b.WriteString("\ufffd")
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// equal compares two JSON values; object key order does not matter.
func equal(a, b any) bool {
	switch x := a.(type) {
	case *object:
		y, ok := b.(*object)
		if !ok || len(x.vals) != len(y.vals) {
			return false
		}
		for k, xv := range x.vals {
			yv, ok := y.vals[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// clone deep-copies a JSON value.
func clone(v any) any {
	switch t := v.(type) {
	case *object:
		c := &object{keys: slices.Clone(t.keys), vals: make(map[string]any, len(t.vals))}
		for k, e := range t.vals {
			c.vals[k] = clone(e)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = clone(e)
		}
		return c
	default:
		return v
	}
}
