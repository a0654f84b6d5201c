package confine

import "slices"

// Thread is an OS thread of this process confined as a plugin is
// (docs/confinement.md, "How it is applied"): a process it starts is
// confined from its first instruction, without the shim. Nothing but the
// functions handed to Do ever runs on it, and Close ends it: the Go
// runtime never runs another goroutine on a locked thread and terminates
// the thread when its goroutine returns still locked.
type Thread struct {
	work chan func()
	done chan struct{}
}

// Direct reports whether a Thread can carry p's confinement: the memory
// group, when p has one, is a cgroup v2 group only, which a process is
// started in (GroupFD, CLONE_INTO_CGROUP); a cgroup v1 memory group is
// joined by the process itself, so such a plugin starts through the shim
// (Command). false for nil and elsewhere than Linux.
func (p *Prepared) Direct() bool {
	return p != nil && directSupported && (p.group == nil || p.group.V1Memory == "")
}

// rulesWith returns p's rules with extraWrite added as writable trees
// (those that resolve).
func (p *Prepared) rulesWith(extraWrite []string) *Rules {
	r := *p.rules
	r.Paths = slices.Clone(r.Paths)
	for _, d := range extraWrite {
		if rd, err := Resolve(d); err == nil {
			r.Paths = append(r.Paths, Rule{Path: rd, Write: true})
		}
	}
	return &r
}

// Do runs f on the thread and returns once it has returned. It must not
// be called after Close.
func (t *Thread) Do(f func()) {
	ran := make(chan struct{})
	t.work <- func() {
		defer close(ran)
		f()
	}
	<-ran
}

// Close ends the thread once the function running on it, if any, has
// returned. A process started from the thread with a parent-death signal
// (SysProcAttr.Pdeathsig) receives it then, so Close only once such a
// process has exited. Close may be called once.
func (t *Thread) Close() {
	close(t.work)
	<-t.done
}
