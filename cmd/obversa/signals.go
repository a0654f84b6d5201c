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
//     one cancels the command, which keeps nothing of a run it had not
//     started.
//   - `obversa stop` sends stopSignal (SIGUSR2): the run is stopped for
//     good (STOPPED).
//   - A second Ctrl-C or SIGTERM forces: the watchdog exits at once (130)
//     and the worker follows through its parent-death signal, leaving the
//     run interrupted, which `obversa resume` takes over.

// stopSignal is what `obversa stop` sends a run's watchdog to end the run
// for good. SIGINT and SIGTERM pause instead.
const stopSignal = syscall.SIGUSR2

// pauseSignal is what `obversa stop --pause` sends a run's watchdog.
const pauseSignal = syscall.SIGUSR1

// signals turns the signals a watchdog command receives into a context
// (cancelled to stop the run, or the command before its run started) and
// a pause channel (closed to pause the supervised run; give it as
// SuperviseOptions.Pause).
type signals struct {
	ctx    context.Context
	cancel context.CancelFunc
	pause  chan struct{} // closed once: pause the run
	ch     chan os.Signal

	mu  sync.Mutex
	run string // the run's name once supervised; "" before
}

// watchSignals starts taking SIGINT, SIGTERM, SIGUSR1 and SIGUSR2 for a
// watchdog command; stop (from the returned func) ends that.
func watchSignals() (*signals, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &signals{ctx: ctx, cancel: cancel, pause: make(chan struct{}), ch: make(chan os.Signal, 4)}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, pauseSignal, stopSignal)
	go s.loop()
	return s, func() { signal.Stop(s.ch); cancel() }
}

// setRun records that the run named run exists and this command carries
// it: from now on Ctrl-C and SIGTERM pause it (once its worker runs)
// instead of cancelling the command.
func (s *signals) setRun(run string) {
	s.mu.Lock()
	s.run = run
	s.mu.Unlock()
}

func (s *signals) loop() {
	interrupted, paused := false, false
	for sig := range s.ch {
		s.mu.Lock()
		run := s.run
		s.mu.Unlock()
		switch {
		case sig == stopSignal:
			fmt.Fprintln(os.Stderr, "stopping: obversa stop asked for it; the run is being stopped cleanly and ends STOPPED")
			s.cancel()
		case sig == pauseSignal && !paused:
			paused = true
			fmt.Fprintf(os.Stderr, "pausing: obversa stop --pause asked for it; the worker is being stopped and the run paused (obversa resume %s carries it on)\n", run)
			close(s.pause)
		case sig == pauseSignal:
		case interrupted:
			fmt.Fprintf(os.Stderr, "forced: the watchdog exits now; the run is left interrupted (obversa resume %s takes it over)\n", orRun(run))
			os.Exit(130)
		case run == "":
			interrupted = true
			fmt.Fprintln(os.Stderr, "interrupted: the command is being cancelled; no run was started (press Ctrl-C again to force)")
			s.cancel()
		default:
			interrupted = true
			if !paused {
				paused = true
				close(s.pause)
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
