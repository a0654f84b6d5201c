package command

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
)

// Environment variables the runner sets on every command.
const (
	// EnvRunOwner carries the run's owner marker, sha256:<64 hex>.
	EnvRunOwner = "OBVERSA_RUN_OWNER"
	// EnvAttemptID carries Request.AttemptID.
	EnvAttemptID = "OBVERSA_ATTEMPT_ID"
	// EnvRunID carries Request.RunID.
	EnvRunID = "OBVERSA_RUN_ID"
	// EnvCommandID carries a random id private to one Run call; teardown
	// finds re-parented descendants by it.
	EnvCommandID = "OBVERSA_COMMAND_ID"
)

// ValidOwnerMarker reports whether s has the owner-marker form
// "sha256:" followed by 64 lower-case hex digits (docs/architecture.md#the-watchdog).
func ValidOwnerMarker(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// effectiveOwner returns the owner marker a command gets: a valid inherited
// marker wins over the requested one.
func effectiveOwner(requested string) string {
	if v := os.Getenv(EnvRunOwner); ValidOwnerMarker(v) {
		return v
	}
	return requested
}

// buildEnv assembles the child's environment: allow-listed inherited names,
// then explicit entries, then the markers. exec.Cmd keeps the last entry of
// a duplicated name.
func buildEnv(req Request, commandID string) []string {
	env := make([]string, 0, len(req.InheritEnv)+len(req.Env)+4)
	for _, name := range req.InheritEnv {
		if v, ok := os.LookupEnv(name); ok && name != "" && !strings.ContainsAny(name, "=\x00") {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, req.Env...)
	set := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	set(EnvRunOwner, effectiveOwner(req.OwnerID))
	set(EnvAttemptID, req.AttemptID)
	set(EnvRunID, req.RunID)
	set(EnvCommandID, commandID)
	return env
}

// newCommandID returns 128 random bits in hex.
func newCommandID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	return hex.EncodeToString(b[:])
}
