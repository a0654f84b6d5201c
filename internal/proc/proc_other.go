//go:build !linux

package proc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// The stand-ins of the Linux process inspection: without /proc, no
// process can be found by its environment or identified by its start
// time, so each function returns ErrUnsupported, or reports nothing
// found, nothing alive and nothing done. Obversa builds and vets here;
// running a watchdog needs Linux.

// Read returns ErrUnsupported.
func Read(int) (Info, error) { return Info{}, ErrUnsupported }

// PIDs returns ErrUnsupported.
func PIDs() ([]int, error) { return nil, ErrUnsupported }

// EnvironHas reports false: no environment can be read here.
func EnvironHas(int, string) bool { return false }

// Stat returns ErrUnsupported.
func Stat(int) (Proc, error) { return Proc{}, ErrUnsupported }

// Alive reports false: no process can be identified here.
func Alive(Proc) bool { return false }

// Signal returns ErrUnsupported: without the start time a reused pid
// cannot be told from the process, so nothing is signalled.
func Signal(Proc, unix.Signal) error { return ErrUnsupported }

// Marked returns ErrUnsupported.
func Marked(string, map[int]bool) ([]Proc, error) { return nil, ErrUnsupported }

// Stop signals nothing and returns procs, all of them left.
func Stop(_ context.Context, procs []Proc, _ time.Duration) []Proc { return procs }

// SetChildSubreaper returns ErrUnsupported.
func SetChildSubreaper() error { return ErrUnsupported }

// MarkedTree returns ErrUnsupported.
func MarkedTree(string, map[int]bool) ([]Proc, error) { return nil, ErrUnsupported }

// FreezeTree freezes nothing and returns none.
func FreezeTree(string, map[int]bool) []Proc { return nil }

// Thaw does nothing.
func Thaw([]Proc) {}

// StopTree stops nothing and finds none.
func StopTree(context.Context, string, map[int]bool, time.Duration) (found, left []Proc) {
	return nil, nil
}

// SelfSleeps returns ErrUnsupported.
func SelfSleeps() (int64, error) { return 0, ErrUnsupported }

// SelfCPU returns ErrUnsupported.
func SelfCPU() (time.Duration, error) { return 0, ErrUnsupported }

// CPU returns ErrUnsupported.
func CPU(int) (time.Duration, error) { return 0, ErrUnsupported }
