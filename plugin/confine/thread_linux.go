package confine

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// directSupported says Thread confinement exists on this platform.
const directSupported = true

// NewThread starts a Thread and applies p's confinement to it, with
// extraWrite added as writable trees (the plugin's socket directory): in
// mount mode a mount namespace of its own with the protected trees
// mounted read-only and CAP_SYS_ADMIN dropped from its bounding set, then
// no_new_privs, the filter against Multipath TCP and the Landlock ruleset
// — what the shim applies to itself before it executes the plugin. A
// process the thread then starts (Do) inherits all of it. It returns the
// error of the step that failed, and then no thread; it must be Direct.
func (p *Prepared) NewThread(extraWrite ...string) (*Thread, error) {
	if !p.Direct() {
		return nil, fmt.Errorf("confinement with a cgroup v1 memory group needs the shim")
	}
	r := p.rulesWith(extraWrite)
	t := &Thread{work: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go t.run(r, p.support.LandlockABI, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// run locks the goroutine to a thread that is not the process's main
// thread (which the runtime never ends: it would stay confined), confines
// it and runs the work handed to Do until Close. It returns locked, so
// the runtime terminates the thread.
func (t *Thread) run(r *Rules, abi int, ready chan<- error) {
	defer close(t.done)
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// While this goroutine holds the main thread, another one gets a
		// thread of its own.
		var wg sync.WaitGroup
		wg.Go(func() {
			runtime.LockOSThread()
			t.confined(r, abi, ready)
		})
		wg.Wait()
		runtime.UnlockOSThread()
		return
	}
	t.confined(r, abi, ready)
}

// confined confines the calling locked thread, reports on ready and runs
// the work until Close.
func (t *Thread) confined(r *Rules, abi int, ready chan<- error) {
	if err := confineThread(r, abi); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range t.work {
		f()
	}
}

// confineThread applies r to the calling locked thread as the shim
// applies it to itself (shim).
func confineThread(r *Rules, abi int) error {
	if len(r.ReadOnly) > 0 {
		// Unsharing the mount namespace unshares the thread's file system
		// information (CLONE_FS) too; the other threads keep theirs.
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("a mount namespace for the plugin: %w", err)
		}
		if err := protectMounts(r.ReadOnly, r.Rebind); err != nil {
			return err
		}
	}
	if abi > 0 {
		return restrict(r, abi)
	}
	return nil
}

// GroupFD returns a descriptor of p's cgroup v2 memory group's directory,
// to start the plugin in it (SysProcAttr.CgroupFD), or -1 when p has no
// v2 group. The descriptor is p's, opened once and closed by Release. It
// returns the error opening the directory failed with, naming it: a
// plugin started without its group would run without its memory limit.
func (p *Prepared) GroupFD() (int, error) {
	if p == nil || p.group == nil || p.group.V2 == "" {
		return -1, nil
	}
	p.dirOnce.Do(func() {
		var err error
		if p.dir, err = os.Open(p.group.V2); err != nil {
			p.dirErr = fmt.Errorf("opening the plugin's memory group: %w", err)
		}
	})
	if p.dirErr != nil {
		return -1, p.dirErr
	}
	return int(p.dir.Fd()), nil
}
