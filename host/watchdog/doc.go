// Package watchdog is the supervising side of `obversa run`: it validates
// and pins a run before anything is written (Prepare), creates the run
// record (Create), takes the run's ownership and runs the executor in a
// worker subprocess in its own process group with the run's owner marker
// (Supervise), restarts the worker after a crash within the run's limits,
// stops every marked process after each worker, and reports the result.
// The worker side (Work) launches the run's plugins from the pinned cache
// and runs the executor.
//
// One writer (docs/decisions.md): while a worker lives, only the worker
// appends — its first append is its own run:worker-started. The watchdog
// appends only once its worker is gone, and the operator commands here
// (Resume, Approve, StopIdle, InterruptPreflight) only while they own the
// run; every append is conditional on the revision of the caller's fold
// (host/runstate). Approve on a live run leaves a request in the run's
// request queue (requests.go) that the worker answers. Status is a view
// of the fold plus the process table.
//
// A worker stopped by a fault of the record (a full device, missing
// artifacts: executor.Fault) hands it over its report pipe (report.go);
// the watchdog records it as a pause, using the room of the run's reserve
// file (reserve.go) when the device is full (docs/decisions.md, "Faults
// the record and plugins cause").
//
// The crash simulation (sim_test.go, built with the failpoints tag) runs
// Supervise, Resume and Approve with workers in process and kills them at
// failpoints; `make sim` runs it.
package watchdog
