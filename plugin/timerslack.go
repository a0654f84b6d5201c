package plugin

import (
	"os"
	"os/exec"
	"strconv"

	"github.com/obversa/obversa/internal/proc"
)

// TimerSlackEnv names the variable through which a worker learns the
// timer slack, in ns, its host had before the watchdog raised the
// worker's (docs/decisions.md, "The worker's timer slack"). The worker
// starts each plugin with that slack, so a plugin and the commands it runs
// keep the timing their operator gave obversa, not the worker's. Unset or
// not a positive integer, a plugin starts with the starting thread's slack.
const TimerSlackEnv = "OBVERSA_PLUGIN_TIMER_SLACK_NS"

// startCmd starts cmd with the timer slack TimerSlackEnv names, from a
// thread locked for the start that gets its own slack back after
// (proc.StartWithTimerSlack). Without the variable it is cmd.Start.
func startCmd(cmd *exec.Cmd) error {
	want, err := strconv.Atoi(os.Getenv(TimerSlackEnv))
	if err != nil || want <= 0 {
		return cmd.Start()
	}
	return proc.StartWithTimerSlack(cmd, func(int) int { return want })
}
