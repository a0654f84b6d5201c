package main

import (
	"strings"
	"testing"
)

// TestCheckListen: a --listen value that is not host:port, or whose port
// is neither a number from 0 to 65535 nor a service name, is refused
// saying the form, before the loopback rule (which called "8787" a
// non-loopback address) or the listener (exit 1, as for a failed run).
func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		listen, want string // want "" = accepted
	}{
		{"127.0.0.1:8787", ""},
		{"127.0.0.1:0", ""},
		{"127.0.0.1:", ""},
		{"localhost:http", ""},
		{"[::1]:8787", ""},
		{"0.0.0.0:8787", ""}, // not loopback: the --token rule decides
		{"8787", `--listen "8787" is not host:port: give the address and the port, for example --listen 127.0.0.1:8787`},
		{"localhost", `--listen "localhost" is not host:port`},
		{"::1", `--listen "::1" is not host:port`},
		{"localhost:-1", `port "-1" is neither a number from 0 to 65535 nor a service name, for example --listen localhost:8787`},
		{"127.0.0.1:99999", `port "99999" is neither`},
		{"127.0.0.1:no-such-service-x", `port "no-such-service-x" is neither`},
	} {
		err := checkListen(tt.listen)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("checkListen(%q) = %v, want nil", tt.listen, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("checkListen(%q) = %v, want %q", tt.listen, err, tt.want)
		}
	}
}

// TestUIListenIsAUsageError: obversa ui refuses a malformed --listen with
// exit 2 naming the form.
func TestUIListenIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, listen := range []string{"8787", "localhost:-1"} {
		r := obversa(t, dir, "ui", "--listen", listen)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--listen \""+listen+"\"") {
			t.Errorf("ui --listen %s: exit %d, stderr %q; want exit %d naming the value", listen, r.code, r.stderr, exitUsage)
		}
	}
}
