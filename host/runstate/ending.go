package runstate

// Ending is how far a run's record says the run has ended
// (docs/decisions.md, "Following a run to its end").
type Ending int

// Endings, in the order a run goes through them.
const (
	// NotEnded: the run runs, is paused or was interrupted; any of them
	// can record more (a paused or interrupted run is resumed).
	NotEnded Ending = iota
	// Ended: a terminal result is recorded (completed, failed, stopped),
	// but not yet the cleanup after the run's last worker, which its
	// watchdog records next (or never, if the watchdog died first).
	Ended
	// Closed: a terminal result and the cleanup after the last worker
	// are recorded; nothing more is appended to the record.
	Closed
)

// Ending returns how far the run has ended by its record alone: whether
// the watchdog that still owes the cleanup lives is for the reader to ask
// (watchdog.Follow).
func (s *State) Ending() Ending {
	switch {
	case s.finished == nil || !s.finished.Terminal():
		return NotEnded
	case s.cleanup == nil:
		return Ended
	}
	return Closed
}
