package launch

import (
	"crypto/sha256"
	"encoding/hex"
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

// GroupTag is the cgroup tag (plugin.LaunchConfig.GroupTag) of the
// plugins of the run whose owner marker is marker: 16 hex digits of its
// SHA-256, so that the run's keeper can stop their groups
// (plugin.StopTaggedGroups); "" for no marker (a launch outside a run).
func GroupTag(marker string) string {
	if marker == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(marker))
	return hex.EncodeToString(sum[:8])
}
