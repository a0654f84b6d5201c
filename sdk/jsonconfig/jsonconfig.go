package jsonconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// Decode decodes the JSON object raw into v (a pointer to a struct) and
// reports what a configuration author got wrong as diagnostics named by
// attribute path: a value that is not an object, invalid JSON, a value of
// the wrong type, a key no field accepts. what names the configuration in
// messages ("mock engine config"). usable is false when v could not be
// decoded at all; unknown keys leave it usable (callers may go on
// validating) but are error diagnostics.
func Decode(raw []byte, v any, what string) (diags []plugin.Diagnostic, usable bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return []plugin.Diagnostic{errorf("", "%s must be an object", what)}, false
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			path := PathAtOffset(trimmed, te.Offset)
			if path == "" {
				path = te.Field
			}
			return []plugin.Diagnostic{errorf(path, "expected %s, got JSON %s", DescribeType(te.Type), te.Value)}, false
		}
		return []plugin.Diagnostic{errorf("", "%s is not valid JSON: %v", what, err)}, false
	}
	for _, k := range UnknownKeys(trimmed, reflect.TypeOf(v), "") {
		diags = append(diags, errorf(k, "unknown %s setting %q", what, k))
	}
	return diags, true
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(diags []plugin.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == plugin.SeverityError {
			return true
		}
	}
	return false
}

func errorf(attr, format string, args ...any) plugin.Diagnostic {
	return plugin.Diagnostic{Severity: plugin.SeverityError, Summary: fmt.Sprintf(format, args...), Attribute: attr}
}

// DescribeType names a Go type in configuration terms ("a string", "a
// list", "an object").
func DescribeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return t.String()
}

// UnknownKeys returns the paths of object keys in raw that no field of t
// accepts, following encoding/json's rules: names from json tags (or the
// Go field name), matched case-insensitively, fields of embedded structs
// promoted. Values that do not have the expected JSON shape are skipped;
// the decoder reports them.
func UnknownKeys(raw json.RawMessage, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		fields := jsonFields(t)
		var out []string
		for _, k := range sortedKeys(obj) {
			ft, ok := lookupField(fields, k)
			if !ok {
				out = append(out, joinPath(path, k))
				continue
			}
			out = append(out, UnknownKeys(obj[k], ft, joinPath(path, k))...)
		}
		return out
	case reflect.Slice:
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return nil
		}
		var out []string
		for i, v := range arr {
			out = append(out, UnknownKeys(v, t.Elem(), path+"["+strconv.Itoa(i)+"]")...)
		}
		return out
	}
	return nil
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func lookupField(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for k, t := range fields {
		if strings.EqualFold(k, key) {
			return t, true
		}
	}
	return nil, false
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// joinPath appends an object key to an attribute path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// pathFrame is one level of nesting while walking JSON tokens.
type pathFrame struct {
	array bool
	index int    // arrays: index of the current element
	key   string // objects: the current key
	isKey bool   // objects: the next string token is a key
}

// PathAtOffset returns the attribute path ("responses[0].calls[1]") of the
// first JSON value of raw that ends at or after byte offset, the position
// encoding/json reports in an UnmarshalTypeError; "" when raw cannot be
// walked that far.
func PathAtOffset(raw []byte, offset int64) string {
	var stack []pathFrame
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if len(stack) == 0 {
				return ""
			}
			stack = stack[:len(stack)-1]
			if dec.InputOffset() >= offset {
				return framesPath(stack)
			}
			valueDone(stack)
			continue
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].isKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].isKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, pathFrame{isKey: true})
		case json.Delim('['):
			stack = append(stack, pathFrame{array: true})
		default:
			if dec.InputOffset() >= offset {
				return framesPath(stack)
			}
			valueDone(stack)
		}
	}
}

// valueDone advances the innermost frame past one value.
func valueDone(stack []pathFrame) {
	if n := len(stack); n > 0 {
		if stack[n-1].array {
			stack[n-1].index++
		} else {
			stack[n-1].isKey = true
		}
	}
}

// framesPath renders a stack as an attribute path.
func framesPath(stack []pathFrame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.array {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}
