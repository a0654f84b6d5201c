package runstate

// PreflightReport is the preflight part of `obversa status` and what
// `obversa preflight RUN` prints.
type PreflightReport struct {
	// Phase is PreflightDisabled, PreflightPending, PreflightAdmitted,
	// PreflightPaused or PreflightFailed.
	Phase string `json:"phase"`
	// Probes counts the probes started; Finished those closed.
	Probes   int `json:"probes"`
	Finished int `json:"finished"`
	// OpenProbe is the probe a crash left open, if any: the next start
	// fails PROTOCOL until `obversa preflight interrupt` closes it.
	OpenProbe *ProbeStartedData `json:"open_probe,omitempty"`
	// PauseEventID and PauseReason describe the open preflight pause.
	PauseEventID string `json:"pause_event_id,omitempty"`
	PauseReason  string `json:"pause_reason,omitempty"`
	// LastPauseEventID is the latest preflight pause, open or resumed.
	LastPauseEventID string `json:"last_pause_event_id,omitempty"`
	// Admitted is each lane's admitted target once the phase is admitted.
	Admitted map[string]AdmittedLane `json:"admitted,omitempty"`
	// Blocked lists the targets withheld from the run.
	Blocked []BlockedTarget `json:"blocked,omitempty"`
	// Failed is set once the phase is failed.
	Failed *PreflightFailedData `json:"failed,omitempty"`
	// Usage is the live probes' usage, kept apart from node usage: null
	// when no live probe finished, "unknown" when any of them reported
	// none, else the summed counters.
	Usage any `json:"usage"`
}

// Report returns the fold's current report.
func (f *PreflightFold) Report() PreflightReport {
	r := PreflightReport{Phase: PreflightPending, Probes: len(f.probes), Finished: f.finished,
		PauseEventID: f.pause, PauseReason: f.reason, LastPauseEventID: f.lastPause}
	switch {
	case !f.enabled:
		r.Phase = PreflightDisabled
	case f.failed != nil:
		r.Phase, r.Failed = PreflightFailed, f.failed
	case f.admitted != nil:
		r.Phase, r.Admitted, r.Blocked = PreflightAdmitted, f.admitted.Lanes, f.admitted.Blocked
	case f.pause != "":
		r.Phase = PreflightPaused
	}
	if open := f.Open(); len(open) > 0 {
		r.OpenProbe = &open[0]
	}
	switch {
	case !f.liveSeen:
	case !f.usage.Known:
		r.Usage = "unknown"
	default:
		r.Usage = map[string]int64{"input": f.usage.Input, "output": f.usage.Output,
			"cache_read": f.usage.CacheRead, "cache_creation": f.usage.CacheCreation}
	}
	return r
}
