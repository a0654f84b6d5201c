// Package watchdog is the supervising side of `obversa run` (DESIGN §6):
// it validates and pins a run before anything is written (Prepare), creates
// the run record (Create), takes the run's process lock and runs the
// executor in a worker subprocess in its own process group with the run's
// owner marker (Supervise), restarts the worker after a crash within the
// run's limits, stops every marked process after each worker, and reports
// the result. The worker side (Work) launches the run's plugins from the
// pinned cache and runs the executor.
package watchdog
