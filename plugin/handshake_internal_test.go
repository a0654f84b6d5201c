package plugin

import (
	"net/netip"
	"strings"
	"testing"
)

func TestForeignAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line, want string
		foreign    bool
	}{
		{"1|1|unix|/tmp/plugin-1/plugin.sock|grpc|MIIB\n", "", false},
		{"1|1|tcp|127.0.0.1:4000|grpc|MIIB\n", "", false},
		{"1|1|tcp|127.8.9.1:4000|grpc|\n", "", false},
		{"1|1|tcp|[::1]:4000|grpc|\n", "", false},
		{"1|1|tcp|[::ffff:127.0.0.1]:4000|grpc|\n", "", false},
		{"1|1|tcp|localhost:4000|grpc|\n", "localhost:4000", true},
		{"1|1|tcp|10.0.0.1:4000|grpc|\n", "10.0.0.1:4000", true},
		{"1|1|tcp|exfil.example.com:53|grpc|\n", "exfil.example.com:53", true},
		{"1|1|tcp|127.0.0.1|grpc|\n", "127.0.0.1", true},
		{"1|1|tcp|0.0.0.0:4000|grpc|\n", "0.0.0.0:4000", true},
		{"1|1|tcp||grpc|\n", "", true},
		{"1|1|tcp\n", "", false},
		{"hello\n", "", false},
	}
	for _, tt := range tests {
		if got, foreign := foreignAddress([]byte(tt.line)); got != tt.want || foreign != tt.foreign {
			t.Errorf("foreignAddress(%q) = %q, %t, want %q, %t", tt.line, got, foreign, tt.want, tt.foreign)
		}
	}
}

func FuzzForeignAddress(f *testing.F) {
	f.Add([]byte("1|1|tcp|127.0.0.1:4000|grpc|MIIB\n"))
	f.Add([]byte("1|1|tcp|example.com:1|grpc|\n"))
	f.Add([]byte("1|1|unix|/x|grpc|\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, foreign := foreignAddress(line)
		parts := strings.Split(strings.TrimSpace(string(line)), "|")
		if len(parts) < 4 || parts[2] != "tcp" {
			if foreign {
				t.Fatalf("foreignAddress(%q) = %q, true for a line that names no tcp address", line, got)
			}
			return
		}
		ap, err := netip.ParseAddrPort(parts[3])
		if dialable := err == nil && ap.Addr().Unmap().IsLoopback(); dialable == foreign || (foreign && got != parts[3]) {
			t.Fatalf("foreignAddress(%q) = %q, %t: a loopback address must pass, any other be named", line, got, foreign)
		}
	})
}
