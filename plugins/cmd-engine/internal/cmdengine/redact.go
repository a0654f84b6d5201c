package cmdengine

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
)

// Redacted replaces a secret value in everything the plugin returns.
const Redacted = "[REDACTED]"

// MinSecretLength is the shortest secret value that is redacted; shorter
// values would mangle ordinary text and are ignored.
const MinSecretLength = 4

// redactor replaces secret values, and their JSON-escaped spellings, with
// Redacted.
type redactor struct {
	r *strings.Replacer // nil: nothing to redact
}

// newRedactor reads the values of the named environment variables.
func newRedactor(names []string) *redactor {
	var secrets []string
	for _, n := range names {
		if v := os.Getenv(n); len(v) >= MinSecretLength {
			secrets = append(secrets, v)
			if q, err := json.Marshal(v); err == nil {
				if esc := string(q[1 : len(q)-1]); esc != v {
					secrets = append(secrets, esc)
				}
			}
		}
	}
	if len(secrets) == 0 {
		return &redactor{}
	}
	// Longer secrets first, so one containing another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range slices.Compact(secrets) {
		pairs = append(pairs, s, Redacted)
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

// str redacts s.
func (r *redactor) str(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// json redacts a JSON document. Redacted needs no escaping, so the result
// stays valid JSON.
func (r *redactor) json(b json.RawMessage) json.RawMessage {
	if r == nil || r.r == nil || b == nil {
		return b
	}
	return json.RawMessage(r.r.Replace(string(b)))
}
