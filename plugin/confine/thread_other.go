//go:build !linux

package confine

import "errors"

// directSupported says Thread confinement exists on this platform.
const directSupported = false

// NewThread fails: confinement needs Linux.
func (p *Prepared) NewThread(...string) (*Thread, error) {
	return nil, errors.New("confinement needs Linux")
}

// GroupFD returns -1: control groups need Linux.
func (p *Prepared) GroupFD() (int, error) { return -1, nil }
