package plugin

// TimerSlackEnv names the variable through which a worker learns the
// timer slack, in ns, its host had before the watchdog raised the
// worker's (docs/decisions.md, "The worker's timer slack"). The worker
// starts each plugin with that slack, so a plugin and the commands it runs
// keep the timing their operator gave obversa, not the worker's. Unset or
// not a positive integer, a plugin starts with the starting thread's slack.
const TimerSlackEnv = "OBVERSA_PLUGIN_TIMER_SLACK_NS"
