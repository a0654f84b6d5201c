package plan

import "errors"

var (
	// ErrUnpinned is returned by Compile when a plugin has no SHA-256 from
	// the run file or the lock file.
	ErrUnpinned = errors.New("plugin is not pinned")
	// ErrDigest is returned by RunStarted.Check when a recorded definition or
	// plan no longer matches its digest.
	ErrDigest = errors.New("recorded digest mismatch")
)
