package mcpserver

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Every tool's arguments are decoded into the struct its inputSchema is generated from
// (schema.go), by the rules that schema states: only its properties, each of its Go type (an
// integer field takes only whole numbers that fit the type), within its enum, pattern, length and
// bounds; absent fields get the schema's default. A field breaking a rule is reported as
// "<field> <rule> (got <value>)", the rule being the field's msg tag when it has one (but for a
// string or boolean of the wrong type, and above a maximum, which are said the same way for
// every field). What one
// field cannot say (a field required by another, a path that must exist) is each struct's check
// method. No handler reads the raw arguments.

// reserved are property names that the original Node bridge rejected because they reach
// Object.prototype; we reject them too so that clients see the same contract.
var reserved = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

// invalidArg is a validation failure; its message names the field and the rule.
type invalidArg struct{ msg string }

func (e *invalidArg) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &invalidArg{msg: fmt.Sprintf(format, args...)}
}

// decode fills *dst, tool's arguments struct, from raw by the tool's inputSchema, and returns the
// names of the arguments the call gave.
func decode[T any](tool run.Tool, raw any, dst *T) (given map[string]bool, err error) {
	in := schemas[tool].in
	if raw == nil {
		raw = map[string]any{}
	}
	args, ok := raw.(map[string]any)
	if !ok {
		return nil, invalid("arguments must be a JSON object")
	}
	if path := findReserved(args, "arguments"); path != "" {
		return nil, invalid("%s: reserved property name is not allowed (__proto__, constructor and prototype are rejected anywhere in the arguments)", path)
	}
	// Only the fields of the tool's inputSchema are accepted, so a typo never silently does less.
	var unknown []string
	for k := range args {
		if in.Properties[k] == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalid("unknown argument %q for %s (accepted: %s)", unknown[0], tool, strings.Join(in.PropertyOrder, ", "))
	}
	given = map[string]bool{}
	v := reflect.ValueOf(dst).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		name := jsonName(f)
		p := in.Properties[name]
		if p == nil || !f.IsExported() {
			continue
		}
		field := v.FieldByIndex(f.Index)
		val, ok := args[name]
		if !ok {
			if p.Default != nil {
				if err := json.Unmarshal(p.Default, field.Addr().Interface()); err != nil {
					panic(fmt.Sprintf("default of %s.%s: %v", tool, name, err))
				}
			}
			continue
		}
		given[name] = true
		msg := f.Tag.Get("msg")
		if n, ok := val.(float64); ok && p.Maximum != nil && n > *p.Maximum {
			return nil, invalid("%s must be at most %g (got %s); it is rejected, not clamped", name, *p.Maximum, describe(val))
		}
		if !set(field, val) {
			return nil, invalid("%s %s (got %s)", name, typeRule(field.Kind(), p, msg), describe(val))
		}
		if rule := broken(p, val); rule != "" {
			if msg != "" {
				rule = msg
			}
			return nil, invalid("%s %s (got %s)", name, rule, describe(val))
		}
	}
	return given, nil
}

// set stores val in field when it is a JSON value of the field's Go type.
func set(field reflect.Value, val any) bool {
	switch field.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if ok {
			field.SetString(s)
		}
		return ok
	case reflect.Bool:
		b, ok := val.(bool)
		if ok {
			field.SetBool(b)
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := val.(float64)
		if !ok || n != math.Trunc(n) || math.Abs(n) >= 1<<63 || field.OverflowInt(int64(n)) {
			return false
		}
		field.SetInt(int64(n))
		return true
	case reflect.Float32, reflect.Float64:
		n, ok := val.(float64)
		if !ok || math.IsInf(n, 0) || math.IsNaN(n) || field.OverflowFloat(n) {
			return false
		}
		field.SetFloat(n)
		return true
	}
	panic(fmt.Sprintf("an argument of Go type %s cannot be decoded", field.Type()))
}

// typeRule is the rule a value of the wrong JSON type (or, for a number, not one of the Go type)
// breaks: a number field's msg, which says what numbers it takes.
func typeRule(kind reflect.Kind, p *jsonschema.Schema, msg string) string {
	switch {
	case len(p.Enum) > 0:
		return enumRule(p)
	case kind == reflect.String:
		return "must be a string"
	case kind == reflect.Bool:
		return "must be a boolean"
	case msg != "":
		return msg
	case kind == reflect.Float32 || kind == reflect.Float64:
		return "must be a number"
	}
	return "must be an integer"
}

func enumRule(p *jsonschema.Schema) string {
	vals := make([]string, len(p.Enum))
	for i, v := range p.Enum {
		vals[i] = fmt.Sprint(v)
	}
	return "must be one of " + strings.Join(vals, ", ")
}

// broken is the first rule of p (but its maximum) that val, of the right type, breaks, or "".
func broken(p *jsonschema.Schema, val any) string {
	switch v := val.(type) {
	case string:
		if p.MinLength != nil && utf8.RuneCountInString(v) < *p.MinLength {
			return "must be " + atLeastChars(*p.MinLength)
		}
		if p.Pattern != "" && !compiled(p.Pattern).MatchString(v) {
			return "must match " + p.Pattern
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, any(v)) {
			return enumRule(p)
		}
	case float64:
		if p.Minimum != nil && v < *p.Minimum {
			return fmt.Sprintf("must be at least %g", *p.Minimum)
		}
		if p.ExclusiveMinimum != nil && v <= *p.ExclusiveMinimum {
			return fmt.Sprintf("must be more than %g", *p.ExclusiveMinimum)
		}
	}
	return ""
}

var patternCache sync.Map // pattern → *regexp.Regexp

func compiled(pattern string) *regexp.Regexp {
	if re, ok := patternCache.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(pattern)
	patternCache.Store(pattern, re)
	return re
}

// findReserved returns the JSON path of the first reserved property name, or "".
func findReserved(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if reserved[k] {
				return path + "." + k
			}
			if p := findReserved(x[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := findReserved(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 60 {
			x = x[:60] + "…"
		}
		return fmt.Sprintf("%q", x)
	case float64:
		return fmt.Sprintf("%v", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
