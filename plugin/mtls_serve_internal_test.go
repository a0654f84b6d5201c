package plugin

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestWithServerCert(t *testing.T) {
	der := []byte("certificate bytes")
	b64 := base64.RawStdEncoding.EncodeToString(der)
	for _, tc := range []struct{ line, want string }{
		{"1|1|unix|/tmp/p|grpc|\n", "1|1|unix|/tmp/p|grpc|" + b64 + "\n"},
		{"1|1|unix|/tmp/p|grpc|", "1|1|unix|/tmp/p|grpc|" + b64},
		{"1|1|unix|/tmp/p|grpc||true\n", "1|1|unix|/tmp/p|grpc|" + b64 + "|true\n"},
		// A certificate already there, or no sixth field: unchanged.
		{"1|1|unix|/tmp/p|grpc|MIIB\n", "1|1|unix|/tmp/p|grpc|MIIB\n"},
		{"1|1|unix|/tmp/p|grpc\n", "1|1|unix|/tmp/p|grpc\n"},
		{"", ""},
	} {
		if got := withServerCert(tc.line, der); got != tc.want {
			t.Errorf("withServerCert(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// FuzzWithServerCert: whatever the line, the rewrite changes at most an
// empty sixth field, into the certificate.
func FuzzWithServerCert(f *testing.F) {
	f.Add("1|1|unix|/tmp/p|grpc|\n")
	f.Add("1|1|unix|/tmp/p|grpc||true")
	f.Add("|||||||")
	der := []byte{0x30, 0x82, 0x01}
	b64 := base64.RawStdEncoding.EncodeToString(der)
	f.Fuzz(func(t *testing.T, line string) {
		got := withServerCert(line, der)
		if got == line {
			return
		}
		body, _ := strings.CutSuffix(line, "\n")
		parts := strings.Split(body, "|")
		if len(parts) < 6 || parts[5] != "" {
			t.Fatalf("withServerCert(%q) = %q: changed a line without an empty sixth field", line, got)
		}
		parts[5] = b64
		want := strings.Join(parts, "|")
		if strings.HasSuffix(line, "\n") {
			want += "\n"
		}
		if got != want {
			t.Fatalf("withServerCert(%q) = %q, want %q", line, got, want)
		}
	})
}
