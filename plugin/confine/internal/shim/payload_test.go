package shim

import (
	"errors"
	"reflect"
	"testing"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range []Payload{
		{Exec: "/bin/true"},
		{Exec: "/p/engine", ExecFD: 4, RulesetFD: 5, RestrictFlags: 3, DenyMPTCP: true,
			Cgroups:  []string{"/sys/fs/cgroup/a", "/sys/fs/cgroup/memory/a"},
			ReadOnly: []string{"/ws/.obversa"}, Rebind: []string{"/ws/.obversa/s=1", ""}},
	} {
		b, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("decoded %+v, want %+v", got, p)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, in := range []string{
		"",                         // no binary
		"exec=/x",                  // not ended
		"exec=/x\x00oops\x00",      // no "="
		"exec=/x\x00mode=1\x00",    // unknown key
		"exec=/x\x00exec_fd=2\x00", // a standard stream
		"exec=/x\x00ruleset_fd=-4\x00",
		"exec=/x\x00restrict_flags=4294967296\x00",
		"exec=/x\x00deny_mptcp=maybe\x00",
		"exec_fd=4\x00",
	} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrPayload) {
			t.Errorf("Decode(%q) = %v, want ErrPayload", in, err)
		}
	}
	if _, err := (Payload{Exec: "/a\x00b"}).Encode(); !errors.Is(err, ErrPayload) {
		t.Errorf("Encode of a NUL byte: %v, want ErrPayload", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("exec=/bin/true\x00exec_fd=4\x00ruleset_fd=5\x00restrict_flags=0\x00deny_mptcp=true\x00cgroup=/c\x00"))
	f.Add([]byte("exec=\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("Decode: %v does not wrap ErrPayload", err)
			}
			return
		}
		// What decodes encodes again to a payload that decodes the same.
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded payload: %v", err)
		}
		again, err := Decode(enc)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", enc, again, err, p)
		}
	})
}
