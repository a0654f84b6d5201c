package launch

import (
	"os"
	"slices"
	"sort"
	"strings"
)

// OwnerEnv is the variable that marks every process of a run (docs/architecture.md#the-watchdog).
const OwnerEnv = "OBVERSA_RUN_OWNER"

// allowed are the host variables a plugin inherits; everything else (API
// keys included) must be passed explicitly with the plugin's `env`.
var allowed = []string{"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "TERM", OwnerEnv}

// Env returns a plugin's environment: the allow-listed host variables
// (PATH, HOME, TMPDIR, locale, TZ, user, the run's owner marker), the host
// variables named in pass (when set), then extra from the run file, sorted
// by name.
func Env(extra map[string]string, pass ...string) []string {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if isAllowed(k) || slices.Contains(pass, k) {
			vars[k] = v
		}
	}
	for k, v := range extra {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func isAllowed(k string) bool {
	if strings.HasPrefix(k, "LC_") {
		return true
	}
	for _, a := range allowed {
		if a == k {
			return true
		}
	}
	return false
}
