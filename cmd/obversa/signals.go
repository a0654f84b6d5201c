package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// How a watchdog command (run, resume, approve) takes signals
// (docs/cli.md "Interrupting a run", docs/decisions.md "Ctrl-C pauses a
// run"):
//
//   - The first Ctrl-C (SIGINT) or SIGTERM pauses a supervised run, as
//     `obversa stop --pause` (SIGUSR1) does: the worker is stopped and the
//     run records OPERATOR_PAUSE, resumable with `obversa resume`.
//     Interrupting the client never destroys the durable work.
//   - Before the run is supervised there is nothing to pause: the first
//     one cancels the command (its prep context), which keeps nothing of
//     a run it had not started. One that comes while the run is being
//     created — too late to keep it from being recorded — pauses it as
//     soon as it is known (setRun): never a stop, which would end it.
//   - `obversa stop` sends stopSignal (SIGUSR2): the run is stopped for
//     good (STOPPED).
//   - A second Ctrl-C or SIGTERM forces: the watchdog exits at once (130)
//     and the worker follows through its parent-death signal, leaving the
//     run interrupted, which `obversa resume` takes over.
//   - SIGHUP (the terminal or SSH session closed) counts as a Ctrl-C: it
//     pauses the run, unless the command was started with SIGHUP ignored
//     (`nohup`), which keeps it ignored. It never forces: a closed
//     terminal sends it twice.
//   - SIGPIPE is taken and dropped: the command's output going away (a
//     `| head` that exited) only stops what it prints, never the run
//     (docs/decisions.md "The output of a watchdog command is not the run").

// stopSignal is what `obversa stop` sends a run's watchdog to end the run
// for good. SIGINT and SIGTERM pause instead.
const stopSignal = syscall.SIGUSR2

// pauseSignal is what `obversa stop --pause` sends a run's watchdog.
const pauseSignal = syscall.SIGUSR1

// signals turns the signals a watchdog command receives into two
// contexts and a pause channel. ctx is cancelled to stop the run for
// good (stopSignal) and is the one to supervise the run with; prep is
// cancelled by that and by a Ctrl-C or SIGTERM before the run is known,
// and is the one to prepare and create the run with. pause is closed to
// pause the supervised run (give it as SuperviseOptions.Pause).
type signals struct {
	ctx        context.Context
	cancel     context.CancelFunc
	prep       context.Context
	cancelPrep context.CancelFunc
	pause      chan struct{} // closed once (pauseOnce): pause the run
	pauseOnce  sync.Once
	ch         chan os.Signal

	mu    sync.Mutex
	run   string // the run's name once supervised; "" before
	early bool   // a Ctrl-C or SIGTERM came before the run was known
}

// watchSignals starts taking SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1
// and SIGUSR2 for a watchdog command; stop (from the returned func) ends
// that.
func watchSignals() (*signals, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	prep, cancelPrep := context.WithCancel(ctx)
	s := &signals{ctx: ctx, cancel: cancel, prep: prep, cancelPrep: cancelPrep, pause: make(chan struct{}), ch: make(chan os.Signal, 4)}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, pauseSignal, stopSignal, syscall.SIGPIPE)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(s.ch, syscall.SIGHUP)
	}
	go s.loop()
	return s, func() { signal.Stop(s.ch); cancel() }
}

// setRun records that the run named run (Ref.Shell) exists and this command carries
// it: from now on Ctrl-C and SIGTERM pause it (once its worker runs)
// instead of cancelling the command. A Ctrl-C or SIGTERM that came
// before, while the run was being created, pauses it now.
func (s *signals) setRun(run string) {
	s.mu.Lock()
	s.run = run
	early := s.early
	s.mu.Unlock()
	if early {
		fmt.Fprintf(os.Stderr, "pausing: the run was recorded as the command was interrupted; it is paused, not ended: obversa resume %s carries it on; obversa stop %s ends it\n", run, run)
		s.pauseRun()
	}
}

// pauseRun closes the pause channel, once.
func (s *signals) pauseRun() { s.pauseOnce.Do(func() { close(s.pause) }) }

func (s *signals) loop() {
	interrupted, paused := false, false
	for sig := range s.ch {
		if sig == syscall.SIGPIPE {
			// A write to a closed stdout or stderr: that write fails
			// (EPIPE) and the run goes on.
			continue
		}
		s.mu.Lock()
		run := s.run
		if run == "" && !interrupted && sig != stopSignal && sig != pauseSignal {
			// Decided under the lock setRun takes: a run recorded
			// meanwhile is paused by setRun, never left to a stop.
			s.early = true
		}
		s.mu.Unlock()
		switch {
		case sig == stopSignal:
			fmt.Fprintln(os.Stderr, "stopping: obversa stop asked for it; the run is being stopped cleanly and ends STOPPED")
			s.cancel()
		case sig == pauseSignal && !paused:
			paused = true
			fmt.Fprintf(os.Stderr, "pausing: obversa stop --pause asked for it; the worker is being stopped and the run paused (obversa resume %s carries it on)\n", run)
			s.pauseRun()
		case sig == pauseSignal:
		case sig == syscall.SIGHUP && interrupted:
			// A closed terminal hangs its foreground job up twice (the
			// kernel, then the shell passing it on to its jobs): a
			// repeated hangup never forces.
		case interrupted:
			fmt.Fprintf(os.Stderr, "forced: the watchdog exits now; the run is left interrupted (obversa resume %s takes it over)\n", orRun(run))
			os.Exit(130)
		case run == "":
			interrupted = true
			fmt.Fprintln(os.Stderr, "interrupted: the command is being cancelled; a run it has not recorded yet is not started (press Ctrl-C again to force)")
			s.cancelPrep()
		default:
			interrupted = true
			if !paused {
				paused = true
				s.pauseRun()
			}
			fmt.Fprintf(os.Stderr, "pausing: the worker is being stopped and the run paused (press Ctrl-C again to force); obversa resume %s carries it on; obversa stop %s ends it\n", run, run)
		}
	}
}

// orRun is run, or RUN when the run is not known yet.
func orRun(run string) string {
	if run == "" {
		return "RUN"
	}
	return run
}
