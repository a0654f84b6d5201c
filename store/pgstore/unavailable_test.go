package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/obversa/obversa/store"
)

// TestUnavailableKinds: the database failing to serve (a connection that
// fails, a server shutting down or out of resources) is told apart from
// the server refusing a request, and from the record's own errors.
func TestUnavailableKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true},  // admin shutdown
		{&pgconn.PgError{Code: "57P03"}, true},  // cannot connect now
		{&pgconn.PgError{Code: "08006"}, true},  // connection failure
		{&pgconn.PgError{Code: "53100"}, true},  // disk full
		{&pgconn.PgError{Code: "58030"}, true},  // I/O error
		{&pgconn.PgError{Code: "23505"}, false}, // unique violation
		{&pgconn.PgError{Code: "42P01"}, false}, // undefined table
		{&pgconn.PgError{Code: "28P01"}, false}, // bad password
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{io.ErrUnexpectedEOF, true},
		{pgconn.ErrConnClosed, true},
		{context.Canceled, false},
		{errors.New("cannot encode"), false},
	} {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if err := dbErr("append to", "L", store.ErrRunNotFound); err != store.ErrRunNotFound {
		t.Errorf("dbErr changed the record's own error: %v", err)
	}
}

// TestOpenUnreachable: a database that nothing answers for is a storage
// fault naming the database (store.ErrUnavailable, code RUN_STORAGE), not
// a bare driver error.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg, err := ParseURL("postgres://nobody@" + addr + "/db?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LocalDir = t.TempDir()
	b, err := Open(context.Background(), cfg, "default")
	if err == nil {
		b.Close()
		t.Fatal("Open of a database nothing answers for succeeded")
	}
	var se *store.StorageError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrUnavailable) || store.Code(err) != "RUN_STORAGE" {
		t.Fatalf("Open: %v (%T), want a *store.StorageError matching store.ErrUnavailable", err, err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("the error does not name the database %s: %v", addr, err)
	}
}
