package plan

import "errors"

var (
	// ErrUnpinned is returned by Compile when a plugin has no SHA-256 from
	// the run file or the lock file.
	ErrUnpinned = errors.New("plugin is not pinned")
	// ErrDigest is returned by RunStarted.Check when a recorded definition or
	// plan no longer matches its digest.
	ErrDigest = errors.New("recorded digest mismatch")
	// ErrIdentityUnresolved is returned by Compile when a lane target calls
	// go to names no provider and the lane gives none (code
	// ENGINE_IDENTITY_UNRESOLVED; the run file's decoder reports the same
	// with its place).
	ErrIdentityUnresolved = errors.New("ENGINE_IDENTITY_UNRESOLVED")
)
