package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/obversa/obversa/store"
)

// unavailable reports whether err says the database could not be reached
// or could not serve the request, rather than refusing it: a failed
// connection (refused, reset, closed, timed out, the server shutting
// down), or a server error of SQLSTATE class 08 (connection exception),
// 53 (insufficient resources: disk full, out of memory, too many
// connections), 57P01–57P03 (shutdown, crash, not yet accepting
// connections) or 58 (system error: an I/O error of the server). A
// server's refusal of the request itself (a constraint, a missing table,
// a bad password) is not.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch c := pe.Code; {
		case strings.HasPrefix(c, "08"), strings.HasPrefix(c, "53"), strings.HasPrefix(c, "58"):
			return true
		case c == "57P01", c == "57P02", c == "57P03":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// dbErr names the run (label) and the operation (op: "append to", "read",
// …) in a database error of op. When the database is unavailable
// (unavailable) it is a *store.StorageError on the label wrapping
// store.ErrUnavailable, so that the run pauses RUN_STORAGE as when a
// file store's disk fails (docs/decisions.md, "Storage faults pause the
// run"), instead of failing; any other error is wrapped as it is. The
// record's own errors (store's sentinels, a *FencedError) are returned
// unchanged; nil stays nil.
func dbErr(op, label string, err error) error {
	if err == nil || isOwn(err) {
		return err
	}
	if unavailable(err) {
		return &store.StorageError{Op: op, Path: label, Err: fmt.Errorf("%w: %w", store.ErrUnavailable, redactErr(err))}
	}
	return fmt.Errorf("pgstore: %s %s: %w", op, label, redactErr(err))
}

// ownErrs are the record's own errors, which dbErr passes on as they are.
var ownErrs = []error{store.ErrNotOwner, store.ErrRunNotFound, store.ErrRunExists, store.ErrStorageLimitExceeded, store.ErrKnownSecret,
	store.ErrInvalidArtifact, store.ErrInvalidEvent, store.ErrRevisionConflict, store.ErrCorruptEventStream,
	store.ErrArtifactIntegrity, store.ErrArtifactNotFound, store.ErrClosed, store.ErrReadOnly, store.ErrUnavailable}

// isOwn reports whether err is one of the record's own errors.
func isOwn(err error) bool {
	var se *store.StorageError
	if errors.As(err, &se) {
		return true
	}
	for _, e := range ownErrs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// connectErr is dbErr for the first connection Open makes. When the
// database cannot be reached (unavailable) it gives the reason once (the
// driver repeats it for every address and TLS attempt, quoting its own
// connection settings) and what to check: whether the server runs, and
// the storage URL, which it names without a password (Config.String).
func connectErr(cfg Config, err error) error {
	if isOwn(err) || !unavailable(err) {
		return dbErr("connect to", cfg.String(), err)
	}
	return &store.StorageError{Op: "connect to", Path: cfg.String(), Err: fmt.Errorf(
		"%w: %s; is the PostgreSQL server running and accepting connections there? Check the storage URL's host, port and database",
		store.ErrUnavailable, connectReason(err))}
}

// connectReason is the innermost reason of a failed connection: the
// network error (dial tcp HOST: connect: connection refused), the
// server's message, else the first line of err.
func connectReason(err error) string {
	var oe *net.OpError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &oe):
		return oe.Error()
	case errors.As(err, &pe):
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	case pgconn.Timeout(err):
		return "the connection timed out"
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(first, ":")
}
