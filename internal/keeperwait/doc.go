// Package keeperwait is the waiting part of `obversa keeper` for a run
// kept in a storage directory (docs/architecture.md#the-watchdog): a
// keeper does nothing until its pipe ends — until both supervisors of
// the run are gone — so this package answers a keeper run in its init,
// before the program's main and before the packages that do not depend on
// it are initialised. It reads the pipe (its stdin) to its end, keeps
// what it read on a new pipe as the keeper's stdin, and executes the same
// binary again (/proc/self/exe) with EndedEnv set, which initialises the
// whole program and runs the keeper's body (watchdog.Keep) on what was
// read. A keeper then costs the Go runtime's start and a few dozen small
// package initialisations while its run starts, not those of gRPC,
// protobuf, HCL or the PostgreSQL driver (docs/decisions.md, "The keeper
// waits before the host's packages initialise").
//
// A run kept in a database is left alone: its keeper reads the owner
// marker from the record before it waits, as the record may be out of
// reach once the run's host is cut off.
//
// Keep its imports to the standard library's packages that nearly every
// other package needs too (os, syscall); cmd/obversa's
// TestKeeperWaitsEarly checks the init trace.
package keeperwait
