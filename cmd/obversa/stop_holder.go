package main

import (
	"fmt"
	"syscall"

	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// watchdogCommands are the commands whose process takes stopSignal and
// pauseSignal while it holds a run (signals.go, from before it takes the
// run's lock): it stops or pauses the run it carries, and a stop that
// comes before its takeover is recorded STOPPED (stopBeforeTakeover).
// Any other holder of a run's lock — its keeper, another `obversa stop`,
// `obversa preflight interrupt` — has no handler for them and would die
// of the signal.
var watchdogCommands = map[string]bool{"obversa run": true, "obversa resume": true, "obversa approve": true}

// commandPathIn is the command args (a command line, args[0] the
// program) run, as cobra names it ("obversa resume"), found past the
// global flags and their values; "" when args name no command.
func commandPathIn(args []string) string {
	if len(args) < 2 {
		return ""
	}
	root := newRoot()
	c, _, err := root.Find(args[1:])
	if err != nil || c == root {
		return ""
	}
	return c.CommandPath()
}

// signalHolder sends sig (stopSignal or pauseSignal) to the run's live
// owner o when it is a watchdog command on this host. A holder on another
// host is refused (watchdog.ErrOtherHost: signals reach this host's
// processes only), and so is any other holder (exit 2, code
// PROCESS_LOCKED), naming it and what to do; nothing is signalled then.
// ref names the run in advice.
func signalHolder(ref runRef, o watchdog.Owner, sig syscall.Signal) error {
	h := o.Holder
	if !o.Here {
		return failedErr(fmt.Errorf("%w: the run is live on host %q (watchdog pid %d; %s): run `obversa stop` on that host",
			watchdog.ErrOtherHost, h.Host, h.PID, o.Detail))
	}
	c := commandPathOf(h.PID)
	if !watchdogCommands[c] {
		return usageErr(heldByOther(ref, h, c, sig == pauseSignal))
	}
	if err := syscall.Kill(h.PID, sig); err != nil {
		return failedErr(fmt.Errorf("signalling watchdog pid %d (`%s`): %w", h.PID, c, err))
	}
	return nil
}

// heldByOther says that the run's lock is held by process h, which runs
// command c (not a watchdog command), so no stop (or, for pause, no
// pause) can be signalled to it, and what to do instead.
func heldByOther(ref runRef, h store.Holder, c string, pause bool) error {
	held := &store.LockedError{Dir: ref.String(), Holder: h, Known: true}
	run := ref.Shell()
	switch {
	case c == "obversa keeper" && pause:
		return fmt.Errorf("%w (`obversa keeper`): the run's keeper holds it while it stops what was left running after the run's watchdog and worker ended; nothing runs the run, so there is nothing to pause: once the keeper is done, `obversa status %s` shows the run interrupted and `obversa resume %s` carries it on", held, run, run)
	case c == "obversa keeper":
		return fmt.Errorf("%w (`obversa keeper`): the run's keeper holds it while it stops what was left running after the run's watchdog and worker ended; nothing was signalled (the keeper takes no stop): once it is done, `obversa status %s` shows the run interrupted and `obversa stop %s` ends it", held, run, run)
	case c == "obversa stop":
		return fmt.Errorf("%w (`obversa stop`): another stop is recording STOPPED for the run; nothing was done: see `obversa status %s`", held, run)
	case c == "":
		c = "a process that is not an obversa command"
	default:
		c = "`" + c + "`"
	}
	again := "obversa stop " + run
	if pause {
		again = "obversa stop --pause " + run
	}
	return fmt.Errorf("%w (%s): only a watchdog (obversa run, resume or approve) takes a stop or a pause, and this holder is none; nothing was signalled: once it lets the run go, run `%s` again", held, c, again)
}
