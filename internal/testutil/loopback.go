package testutil

import (
	"net"
	"testing"
)

// Loopback listens on a free TCP port of 127.0.0.1 until the test ends,
// accepting and closing every connection, and returns the port: a peer
// that a confined process may or may not reach.
func Loopback(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
