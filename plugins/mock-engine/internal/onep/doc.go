// Package onep puts the mock engine on one P (runtime.GOMAXPROCS(1))
// unless GOMAXPROCS is set in its environment (docs/decisions.md, "The
// mock engine runs on one P"). It does so in its package initialisation,
// which Go runs before gRPC's and protobuf's: this package imports only
// os and runtime, and is the first in import-path order to be ready once
// os is. Changing GOMAXPROCS stops the world and hands back the caches of
// the Ps it removes; done in main, after the other packages have
// initialised on two Ps, that was about 3 ms of CPU per launch of the
// mock on the 2-core development VM, and next to nothing here.
package onep
