package executor

import (
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
)

// PluginDiedError is what Execute returns when a plugin process died under
// an attempt: nothing was recorded for the attempt, and the next worker
// carries the position on by the crash table (docs/decisions.md, "A plugin
// process that dies under an attempt is a worker crash, not a node
// failure"). It matches ErrPluginDied and what Err matches
// (plugin.ErrPluginExited; a *plugin.ExitedError names the plugin, its
// binary and how it ended).
type PluginDiedError struct {
	// Position is the position whose attempt the plugin died under.
	Position string
	// Attempt is that attempt's id.
	Attempt string
	// Err is the call's error.
	Err error
}

// Error names the plugin, how it ended and the position.
func (e *PluginDiedError) Error() string {
	return fmt.Sprint(e.Err) + runstate.DiedUnder(e.Position)
}

// Unwrap returns ErrPluginDied and the call's error.
func (e *PluginDiedError) Unwrap() []error { return []error{ErrPluginDied, e.Err} }

// ReportOf returns what a worker that stops with err reports to its
// watchdog: the *Fault FaultOf finds, or, for a plugin that died under an
// attempt, a PLUGIN_DIED fault whose Message names the plugin, its binary
// (Path), how it ended and the position (a restart mends that one: the
// watchdog records it with the worker's exit and starts the next worker).
// nil when err is neither.
func ReportOf(err error) *Fault {
	if f := FaultOf(err); f != nil {
		return f
	}
	var d *PluginDiedError
	if !errors.As(err, &d) {
		return nil
	}
	f := &Fault{Code: runstate.CodePluginDied, Problem: d.Error(), Position: d.Position, err: err}
	var ee *plugin.ExitedError
	if errors.As(err, &ee) {
		f.Path = ee.Path
	}
	f.Message = f.Problem + "; the worker restarts with a fresh plugin process"
	return f
}

// Restarts reports whether a restart of the worker mends the fault (a
// plugin died): the watchdog records it and starts the next worker
// instead of pausing the run.
func (f *Fault) Restarts() bool { return f.Code == runstate.CodePluginDied }
