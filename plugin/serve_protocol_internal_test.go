package plugin

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandshakeLineParses: the line Serve prints is what the host's
// parser (ParseHandshakeLine, the conformance kit's) reads back field by
// field, with and without a certificate.
func TestHandshakeLineParses(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		cert []byte
	}{
		{&net.UnixAddr{Net: "unix", Name: "/tmp/obversa-0/plugin-dir1/plugin42"}, []byte("certificate DER \x00\xff")},
		{&net.UnixAddr{Net: "unix", Name: "/tmp/plugin7"}, nil},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4711}, []byte{1}},
	} {
		line := handshakeLine(tc.addr, tc.cert)
		if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
			t.Errorf("%q: not one line", line)
		}
		h, err := ParseHandshakeLine(line)
		if err != nil {
			t.Errorf("ParseHandshakeLine(%q): %v", line, err)
			continue
		}
		if h.CoreVersion != CoreProtocolVersion || h.AppVersion != ProtocolVersion || h.Protocol != "grpc" ||
			h.Network != tc.addr.Network() || h.Address != tc.addr.String() || !bytes.Equal(h.ServerCert, tc.cert) {
			t.Errorf("ParseHandshakeLine(%q) = %+v", line, h)
		}
	}
}

// TestListenUnixInDir: the plugin's socket is made in the directory the
// host names, and gone once the listener closes.
func TestListenUnixInDir(t *testing.T) {
	dir := t.TempDir()
	l, err := listenUnix(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := l.Addr().String()
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "plugin") {
		t.Errorf("socket %s, want plugin<digits> in %s", path, dir)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket %s left after Close: %v", path, err)
	}
}
