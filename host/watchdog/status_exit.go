package watchdog

import "time"

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
