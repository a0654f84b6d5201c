package main

import (
	"strings"
	"testing"
)

// TestFlagErrorEchoIsCut: what an operator typed that cobra or pflag
// refuses — a flag's value (quoted twice before: in the message and in
// its parse error), an unknown flag, a flag group, an unknown command —
// is echoed cut to maxEchoBytes with its length, as the rest of the
// command line's errors are, and the refusal stays a usage error.
func TestFlagErrorEchoIsCut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := strings.Repeat("x", 100000)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--from", big, "r"}, `for "--from" flag: ParseInt: invalid syntax`},
		{[]string{"status", "--watch=" + big, "r"}, `for "--watch" flag: ParseBool: invalid syntax`},
		{[]string{"status", "--" + big, "r"}, "unknown flag: --xxx"},
		{[]string{"status", "-j" + big, "r"}, `unknown shorthand flag: 'j' in -jxxx`},
		{[]string{big}, `unknown command "xxx`},
		{[]string{"events", "--from", "abc", "r"}, `invalid argument "abc" for "--from" flag: ParseInt: invalid syntax`},
	} {
		r := obversa(t, dir, tc.args...)
		name := tc.args[0][:min(len(tc.args[0]), 10)]
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %.300q; want exit %d and %q", name, r.code, r.stderr, exitUsage, tc.want)
		}
		if len(r.stderr) > 1000 {
			t.Errorf("%s: %d bytes of error for a %d-byte argument", name, len(r.stderr), len(big))
		}
		if strings.Contains(strings.Join(tc.args, " "), big) && !strings.Contains(r.stderr, " bytes in all)") {
			t.Errorf("%s: the echo does not say how long the value was: %.300q", name, r.stderr)
		}
	}
}
