//go:build !linux

package plugin

import "os/exec"

// bareGroup is empty here: control groups are Linux's.
type bareGroup struct{}

// newBareGroup returns nil: control groups are Linux's.
func newBareGroup(string) *bareGroup { return nil }

// TaggedGroupPIDs returns nil: control groups are Linux's.
func TaggedGroupPIDs(string) []int { return nil }

// StopTaggedGroups does nothing: control groups are Linux's.
func StopTaggedGroups(string) (stopped, left []int) { return nil, nil }

// apply does nothing.
func (b *bareGroup) apply(*exec.Cmd) {}

// stop does nothing.
func (b *bareGroup) stop() []int { return nil }
