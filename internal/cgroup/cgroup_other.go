//go:build !linux

package cgroup

import "time"

// Self reports no groups: control groups are Linux's.
func Self() (Info, error) {
	return Info{Reason: "control groups need Linux"}, nil
}

// SelfV2 returns ErrUnsupported.
func SelfV2() (string, error) { return "", ErrUnsupported }

// Options says what Create makes.
type Options struct {
	LimitBytes int64
	V2         bool
}

// Create returns ErrUnsupported.
func Create(Info, string, Options) (*Group, error) { return nil, ErrUnsupported }

// Dirs returns nil.
func (g *Group) Dirs() []string { return nil }

// OOMKills returns 0.
func (g *Group) OOMKills() uint64 { return 0 }

// Procs returns nil.
func (g *Group) Procs() []int { return nil }

// Kill does nothing.
func (g *Group) Kill() {}

// Remove does nothing.
func (g *Group) Remove() error { return nil }

// RemoveTree does nothing.
func RemoveTree(string) error { return nil }

// Sweep does nothing.
func Sweep(string, time.Duration, ...string) {}
