package plugin

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// unixPair returns both ends of a unix socket connection, the first one
// made a rawIOConn.
func unixPair(t *testing.T) (raw, peer net.Conn) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-accepted
	if p == nil {
		t.FailNow()
	}
	raw = rawIO(c)
	if _, ok := raw.(*rawIOConn); !ok {
		t.Fatalf("rawIO(%T) = %T, want *rawIOConn", c, raw)
	}
	t.Cleanup(func() { raw.Close(); p.Close() })
	return raw, p
}

// TestRawIOConnCarriesBytes writes more than the socket holds both ways,
// so that writes wait for room and reads for data, and checks that every
// byte arrives in order, and that the peer's close reads as io.EOF.
func TestRawIOConnCarriesBytes(t *testing.T) {
	raw, peer := unixPair(t)
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, dir := range []struct {
		name     string
		from, to net.Conn
	}{{"raw writes", raw, peer}, {"raw reads", peer, raw}} {
		t.Run(dir.name, func(t *testing.T) {
			werr := make(chan error, 1)
			go func() {
				n, err := dir.from.Write(data)
				if err == nil && n != len(data) {
					err = io.ErrShortWrite
				}
				werr <- err
			}()
			got := make([]byte, len(data))
			if _, err := io.ReadFull(dir.to, got); err != nil {
				t.Fatalf("reading: %v", err)
			}
			if err := <-werr; err != nil {
				t.Fatalf("writing: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("the bytes read differ from the bytes written")
			}
		})
	}
	peer.Close()
	if n, err := raw.Read(make([]byte, 16)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want 0, io.EOF", n, err)
	}
}

// TestRawIOConnDeadlineAndClose checks that a read waiting for data ends
// at the connection's deadline with a timeout, and that reads and writes
// on a closed connection fail with net.ErrClosed, as net.Conn's do.
func TestRawIOConnDeadlineAndClose(t *testing.T) {
	raw, _ := unixPair(t)
	if err := raw.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := raw.Read(make([]byte, 16))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v, want a timeout", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read past the deadline = %#v, want a *net.OpError of op read", err)
	}
	raw.Close()
	if _, err := raw.Read(make([]byte, 16)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read on a closed connection = %v, want net.ErrClosed", err)
	}
	if _, err := raw.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write on a closed connection = %v, want net.ErrClosed", err)
	}
}

// TestRawIOConnPeerGone checks that a write to a connection whose peer
// has closed fails (EPIPE or ECONNRESET) instead of blocking.
func TestRawIOConnPeerGone(t *testing.T) {
	raw, peer := unixPair(t)
	peer.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = raw.Write(make([]byte, 64<<10))
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write to a closed peer = %v, want a *net.OpError of op write", err)
	}
}
