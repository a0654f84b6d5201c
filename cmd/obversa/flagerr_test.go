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
		{[]string{"events", "--from", big, "r"}, `for "--from" flag: must be a whole number from 1 to`},
		{[]string{"status", "--watch=" + big, "r"}, `for "--watch" flag: ParseBool: invalid syntax`},
		{[]string{"status", "--" + big, "r"}, "unknown flag: --xxx"},
		{[]string{"status", "-j" + big, "r"}, `unknown shorthand flag: 'j' in -jxxx`},
		{[]string{big}, `unknown command "xxx`},
		{[]string{"events", "--from", "abc", "r"}, `invalid argument "abc" for "--from" flag: must be a whole number from 1 to`},
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

// TestFileFlagsSayHowToFix: a file a flag names that cannot be read — a
// signing key, a password file, the run browser's token — is refused as a
// usage error naming the flag and the file and saying what to pass, not as
// Go's "open FILE: no such file or directory".
func TestFileFlagsSayHowToFix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"plugin", "sign", "--key", "nope.key", "bin"}, []string{`--key "nope.key" cannot be read (no such file or directory)`, "obversa plugin keygen"}},
		{[]string{"plugin", "keygen", "--password-file", "nope.pw"}, []string{`--password-file "nope.pw" cannot be read (no such file or directory)`, "first line is the key's password"}},
		{[]string{"ui", "--listen", "0.0.0.0:0", "--token", "nope.tok"}, []string{`--token "nope.tok" cannot be read (no such file or directory)`, "openssl rand -hex 32 > nope.tok"}},
	} {
		r := obversa(t, dir, tc.args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, r.code, exitUsage, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, r.stderr, w)
			}
		}
		if strings.Contains(r.stderr, "open nope") {
			t.Errorf("%v: stderr holds Go's open error: %q", tc.args, r.stderr)
		}
	}
}
