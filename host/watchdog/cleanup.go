package watchdog

import (
	"context"
	"os"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
)

// cleanup stops every process carrying the run's marker (the worker's
// plugins and their commands, whatever group they moved to), records what
// it stopped, and returns the survivors.
func (s *supervisor) cleanup(ctx context.Context) ([]proc.Proc, error) {
	reapOrphans()
	marked, left := stopRun(ctx, s.marker, s.plan.TeardownGrace())
	if len(marked) > 0 {
		reapOrphans()
	}
	// Recorded even when nothing was found: status then says the cleanup
	// after this worker was verified (cleanup_verified), whatever ended it.
	return left, s.record(ctx, runstate.EventCleanup, runstate.NewCleanup(marked, left))
}

// stopRun stops every process carrying the owner marker, and their
// descendants, except this process: frozen, then TERM, grace, KILL,
// verified by (pid, start time). Then it stops what is left in the run's
// tagged cgroups and removes them (plugin.StopTaggedGroups): a worker
// that died left its plugins' groups — memory groups included — for
// whoever stops the run. Then it removes the plugin socket directories
// of processes that ended (plugin.SweepSockets): a killed worker's. It
// returns the processes it found and those that survived.
func stopRun(ctx context.Context, marker string, grace time.Duration) (found, left []proc.Proc) {
	found, left = proc.StopTree(ctx, launch.OwnerEnv+"="+marker, map[int]bool{os.Getpid(): true}, grace)
	grouped, groupLeft := plugin.StopTaggedGroups(launch.GroupTag(marker))
	plugin.SweepSockets()
	return union(found, procsOf(grouped)), union(left, procsOf(groupLeft))
}
