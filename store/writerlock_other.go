//go:build unix && !linux

package store

import "errors"

// WriterLock is unsupported here: without the writer mark a closing
// writer cuts off the zero tail as it always did (docs/decisions.md,
// "A closing writer trims only as the last one").
func (osFile) WriterLock(exclusive, wait bool) error { return errors.ErrUnsupported }

// WriterUnlock is unsupported where WriterLock is.
func (osFile) WriterUnlock() error { return errors.ErrUnsupported }
