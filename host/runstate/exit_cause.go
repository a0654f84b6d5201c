package runstate

import (
	"fmt"
	"strings"
)

// Cause says how the worker ended, from its recorded exit: the cause it
// reported (its code, and message when there is one), else the signal
// that ended it, else its exit status — "stopped (PLUGIN_DIED: …)", "was
// ended by a signal (killed)", "exited with status 1". Status, the
// progress lines, the live view and the reconcile reason of an attempt
// the worker's end cut off all say it in these words.
func (x Exit) Cause() string {
	return exitCause(x.Code, x.Message, x.Signal, x.ExitCode)
}

// Cause is the recorded exit's Cause.
func (d WorkerExitedData) Cause() string {
	return exitCause(d.Code, d.Message, d.Signal, d.ExitCode)
}

func exitCause(code, message, signal string, status int) string {
	switch {
	case code != "" && message != "":
		return fmt.Sprintf("stopped (%s: %s)", code, message)
	case code != "":
		return fmt.Sprintf("stopped (%s)", code)
	case signal != "":
		return fmt.Sprintf("was ended by a signal (%s)", signal)
	}
	return fmt.Sprintf("exited with status %d", status)
}

// diedUnder returns the position whose attempt the plugin died under, for
// a PLUGIN_DIED exit: DiedUnder as recorded, or, for a record written
// before it was kept, the position that ends the message (DiedUnder's
// suffix). "" for other exits, or when the message names none.
func (d WorkerExitedData) diedUnder() string {
	if d.Code != CodePluginDied {
		return ""
	}
	if d.DiedUnder != "" {
		return d.DiedUnder
	}
	i := strings.LastIndex(d.Message, DiedUnder(""))
	if i < 0 {
		return ""
	}
	return d.Message[i+len(DiedUnder("")):]
}
