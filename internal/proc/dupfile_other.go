//go:build !linux

package proc

import (
	"errors"
	"os"
)

// DupFile returns errors.ErrUnsupported: its callers hand open files to
// children on Linux only.
func DupFile(*os.File) (*os.File, error) { return nil, errors.ErrUnsupported }
