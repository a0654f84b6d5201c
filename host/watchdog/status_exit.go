package watchdog

import (
	"cmp"
	"time"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
)

// ExitReport is a recorded worker crash (run:worker-exited): which
// restart's worker, when it was recorded, how the process ended (ExitCode,
// or Signal) and the cause the worker reported, if it did (Code, Message).
type ExitReport struct {
	Restart  int       `json:"restart"`
	At       time.Time `json:"at"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	Code     string    `json:"code,omitempty"`
	Message  string    `json:"message,omitempty"`
}

// viewExits sets r's Backoff, while the run waits to restart a crashed
// worker (r.Phase recovering), and its LastExit, from st's recorded worker
// exits and the run's restart policy at time now.
func viewExits(r *Report, st *runstate.State, restart plan.Restart, now time.Time) {
	if x := st.LastExit(); r.Phase == PhaseRecovering && x != nil {
		total := restart.Backoff(x.Restart)
		r.Backoff = &BackoffReport{Restart: x.Restart + 1, TotalMS: total.Milliseconds(),
			RemainingMS: max(total-now.Sub(x.At), 0).Milliseconds()}
	}
	if x := cmp.Or(st.LastExit(), st.PreviousExit()); x != nil {
		r.LastExit = &ExitReport{Restart: x.Restart, At: x.At, ExitCode: x.ExitCode, Signal: x.Signal, Code: x.Code, Message: x.Message}
	}
}

// viewActive sets r's Active positions at time now, and for an
// interrupted run (r.Phase) its InterruptedAt; held says whether a live
// owner holds the run.
func viewActive(r *Report, st *runstate.State, now time.Time, held bool) {
	if st.Finished() != nil {
		// Nothing is active once the run ended, even in a record whose
		// end did not close its positions (written before it did).
		return
	}
	at, halted := st.Halted(held)
	if halted {
		// Nothing has carried the run on since its last event (paused,
		// or interrupted): the positions it left started were cut off
		// then, and their clocks stopped with it.
		now = at
	}
	if r.Phase == PhaseInterrupted {
		r.InterruptedAt = &at
	}
	r.Active = active(st, now, halted)
}
