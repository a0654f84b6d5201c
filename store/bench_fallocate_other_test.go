//go:build !linux

package store

import (
	"errors"
	"os"
)

// fallocate reports that fallocate(2) is not there.
func fallocate(*os.File, bool, int64) error {
	return errors.New("no fallocate(2) on this platform")
}
