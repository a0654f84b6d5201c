package hcl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// errAttributePath is returned by parseAttributePath for text that is not
// an attribute path.
var errAttributePath = errors.New("invalid attribute path")

// pathStep is one step of an attribute path: an object key, or a list
// index when Key is "" and Index >= 0.
type pathStep struct {
	Key   string
	Index int
}

// parseAttributePath parses the attribute path a plugin names in a
// configuration diagnostic (plugin.Diagnostic.Attribute; docs/run-file.md,
// "Plugins, pins and config"): a first key, then any of ".key", "[N]" (a
// list index, N a decimal number) and `["key"]` (a key written as a JSON
// string, for keys holding '.', '[' or quotes). A bare key is any
// non-empty run of characters other than '.', '[' and ']'. Examples: "command", "responses[1].fail.kind",
// `env["A.B"]`. The path is UTF-8 text. Errors wrap errAttributePath and
// name the offset.
func parseAttributePath(s string) ([]pathStep, error) {
	var steps []pathStep
	bad := func(i int, why string) ([]pathStep, error) {
		return nil, fmt.Errorf("%w %q at byte %d: %s", errAttributePath, s, i, why)
	}
	if !utf8.ValidString(s) {
		return bad(0, "not UTF-8 text")
	}
	i := 0
	for i < len(s) {
		switch {
		case s[i] == '[' && i+1 < len(s) && s[i+1] == '"':
			// A quoted key: the JSON string up to the closing quote.
			end := i + 2
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) || end+1 >= len(s) || s[end+1] != ']' {
				return bad(i, `a quoted key needs ["…"]`)
			}
			var key string
			if err := json.Unmarshal([]byte(s[i+1:end+1]), &key); err != nil {
				return bad(i, "the quoted key is not a JSON string")
			}
			steps = append(steps, pathStep{Key: key, Index: -1})
			i = end + 2
		case s[i] == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return bad(i, "'[' without ']'")
			}
			n, err := strconv.Atoi(s[i+1 : i+end])
			if err != nil || n < 0 || s[i+1] == '+' || s[i+1] == '-' {
				return bad(i, "an index is a decimal number")
			}
			steps = append(steps, pathStep{Index: n})
			i += end + 1
		default:
			if s[i] == '.' {
				if len(steps) == 0 {
					return bad(i, "a path starts with a key")
				}
				i++
			} else if len(steps) > 0 {
				return bad(i, "keys after the first follow a '.'")
			}
			end := i
			for end < len(s) && s[end] != '.' && s[end] != '[' && s[end] != ']' {
				end++
			}
			if end == i {
				return bad(i, "empty key")
			}
			steps = append(steps, pathStep{Key: s[i:end], Index: -1})
			i = end
		}
	}
	if len(steps) == 0 {
		return bad(0, "empty path")
	}
	return steps, nil
}

// ConfigRange returns where the plugin's `config` attribute sets the value
// at attribute, an attribute path as a plugin's Configure names it (see
// docs/run-file.md): for an object member the range from its key to its
// value, for a list element the element. exact is false when the path is
// empty, malformed or leads where the source has no constant object or
// list (a value computed by a function, or a key the config does not
// set); the range is then the deepest part of the path that was found, the
// config value itself, or, without a config attribute, the block header.
func (p *Plugin) ConfigRange(attribute string) (rng hclv2.Range, exact bool) {
	rng = p.Ranges.Config
	expr := p.Ranges.config
	if expr == nil {
		return rng, false
	}
	rng = expr.Range()
	if attribute == "" {
		return rng, false
	}
	steps, err := parseAttributePath(attribute)
	if err != nil {
		return rng, false
	}
	scratch := &decoder{}
	for _, st := range steps {
		next, r, ok := configStep(scratch, expr, st)
		if !ok {
			return rng, false
		}
		expr, rng = next, r
	}
	return rng, true
}

// configStep moves one step into a constant object or list constructor.
func configStep(scratch *decoder, expr hclsyntax.Expression, st pathStep) (hclsyntax.Expression, hclv2.Range, bool) {
	if st.Key != "" || st.Index < 0 {
		items, ok := scratch.objectItems(expr, "config")
		if !ok {
			return nil, hclv2.Range{}, false
		}
		for _, it := range items {
			if it.Key == st.Key {
				return it.Value, hclv2.RangeBetween(it.KeyRange, it.Value.Range()), true
			}
		}
		return nil, hclv2.Range{}, false
	}
	tc, ok := expr.(*hclsyntax.TupleConsExpr)
	if !ok || st.Index >= len(tc.Exprs) {
		return nil, hclv2.Range{}, false
	}
	return tc.Exprs[st.Index], tc.Exprs[st.Index].Range(), true
}
