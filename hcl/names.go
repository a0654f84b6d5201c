package hcl

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/agext/levenshtein"

	"github.com/obversa/obversa/internal/idname"
)

// idPattern is the id grammar shared with the store (docs/architecture.md#the-record): plugin,
// lane, node, key and namespace names must match it.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// envNamePattern is the grammar of an environment variable name.
var envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// hexPattern64 matches a lower-case SHA-256 digest in hex.
var hexPattern64 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

// validID reports whether s matches the id grammar.
func validID(s string) bool { return idPattern().MatchString(s) }

// idGrammarDetail explains the id grammar to a user who broke it.
func idGrammarDetail(what, name string) string {
	return fmt.Sprintf("%q is not a valid %s name. Names start with a letter or digit, continue with letters, digits, '.', '_' or '-', and are at most 128 characters (the grammar [A-Za-z0-9][A-Za-z0-9._-]{0,127}). Rename it, for example to %q.", name, what, fixID(name))
}

// fixID proposes a valid id close to s (idname.Suggest).
func fixID(s string) string { return idname.Suggest(s, "name") }

// suggest returns the candidate closest to given when it is close enough to
// be a likely typo, or "".
func suggest(given string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := levenshtein.Distance(given, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean returns ` Did you mean "x"?` for the closest candidate, or a
// list of the valid choices when none is close, or "" when there are none.
func didYouMean(given string, candidates []string) string {
	if s := suggest(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	if len(candidates) == 0 {
		return ""
	}
	return " Declared: " + quoteList(candidates) + "."
}

// quoteList renders names as `"a", "b" and "c"`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	default:
		return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
	}
}
