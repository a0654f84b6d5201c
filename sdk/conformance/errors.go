package conformance

import "errors"

// Errors returned by Check, Run and LoadOptions. A plugin that fails a
// case is not an error: it is a failed Result in the Report.
var (
	// ErrOptions is returned for invalid Options or an invalid conformance
	// file: unknown fields, an unknown type, case or scenario name, a
	// scenario without a prompt, or invalid JSON.
	ErrOptions = errors.New("invalid conformance options")

	// ErrBinary is returned when the binary to check does not exist, is not
	// a regular file, or is not executable.
	ErrBinary = errors.New("plugin binary not usable")
)
