package hostenv

import "strings"

// allowed are the host variables that carry no secret: the search path,
// home, temporary directory, locale, time zone, user and terminal. LC_*
// and obversa's own OBVERSA_* variables are allowed too.
var allowed = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true, "LANG": true, "LANGUAGE": true,
	"TZ": true, "USER": true, "LOGNAME": true, "TERM": true,
}

// Allowed reports whether the variable name may be passed on or kept in
// /proc/<pid>/environ: PATH, HOME, TMPDIR, LANG, LANGUAGE, TZ, USER,
// LOGNAME, TERM, LC_* and OBVERSA_*.
func Allowed(name string) bool {
	return allowed[name] || strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "OBVERSA_")
}

// Minimal returns the entries ("NAME=value") of env whose name is
// Allowed, in order.
func Minimal(env []string) []string {
	out := make([]string, 0, len(allowed)+4)
	for _, kv := range env {
		if name, _, ok := strings.Cut(kv, "="); ok && Allowed(name) {
			out = append(out, kv)
		}
	}
	return out
}
