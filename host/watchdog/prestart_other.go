//go:build !linux

package watchdog

import (
	"io"
	"os"
)

// handoffSocket refuses: see errPlatform.
func handoffSocket() (mine, theirs *os.File, err error) { return nil, nil, errPlatform }

// sendWithFiles refuses: see errPlatform.
func sendWithFiles(*os.File, []byte, []*os.File) error { return errPlatform }

// receiveHandoff refuses: see errPlatform.
func receiveHandoff(stdin *os.File) (io.Reader, error) { return stdin, errPlatform }
