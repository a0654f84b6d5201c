//go:build !linux

package command

import "errors"

// makeSubgroup fails: control groups are Linux's.
func makeSubgroup() error { return errors.New("no cgroups on this platform") }
