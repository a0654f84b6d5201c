// Package failpoint marks the points where crash tests stop a process
// between two durable writes no signal could aim at (after a dispatch is
// durable and before its attempt-started, after a policy decision is
// durable and before the attempt starts, inside a preflight probe, before
// and after every append and every plugin call).
//
// It follows etcd's gofail: the points cost nothing in a release build.
// Every call site reads
//
//	if failpoint.Enabled {
//		failpoint.Hit(ctx, failpoint.AfterStart, node)
//	}
//
// and Enabled is a constant false unless the binary is built with
// `-tags failpoints`, so the compiler drops the whole statement and the
// package's code is absent from a release binary (TestReleaseBinaryHasNone
// checks the symbol table). Crash tests build their binaries with the tag
// in the shared TestMain helper (internal/testbin).
//
// Armed from outside a process, a point SIGKILLs it: the environment
// variable OBVERSA_FAILPOINT = "<point>:<key>:<flag file>" fires at the
// first Hit of point with key (which may hold colons, as an event type
// does; the flag file's path may not); the flag file is created exclusively, so
// only the first process that gets there dies and its replacement carries
// on ("-" fires every time). The point "flood" makes a worker write to its
// console without end. Inside a process (the crash simulation) a Handler
// carried by the context decides instead.
package failpoint

// Points. The key names what the point is about: a node id, a probe's
// "<lane>/<check>", or an event type for the append points.
const (
	// AfterDispatch fires once the dispatch decision naming the node is
	// durable, before its attempt-started is written.
	AfterDispatch = "after-dispatch"
	// AfterDecision fires once the action policy's allow for the node's
	// position is durable, before its attempt-started is written.
	AfterDecision = "after-decision"
	// AfterStart fires once the node's attempt-started is durable, before
	// its code is called.
	AfterStart = "after-start"
	// BeforePlugin and AfterPlugin surround every plugin call an attempt
	// makes (Invoke, Run); the key is the node.
	BeforePlugin = "before-plugin"
	AfterPlugin  = "after-plugin"
	// AfterResult fires once the node's result is durable.
	AfterResult = "after-result"
	// AfterReview fires once a loop's graph:loop-reviewed is durable; the
	// key is the loop.
	AfterReview = "after-review"
	// AfterRound fires once a loop's graph:loop-round-started is durable;
	// the key is the loop.
	AfterRound = "after-round"
	// InProbe fires once a probe's preflight:probe-started is durable,
	// before its check runs; the key is "<lane>/<check>".
	InProbe = "in-probe"
	// BeforeAppend and AfterAppend surround every append to the record;
	// the key is the type of the batch's first event. AfterAppend also
	// fires in `obversa run` once graph:run-started is durable, before
	// any worker is handed the run.
	BeforeAppend = "before-append"
	AfterAppend  = "after-append"
	// WorkerStart fires when a worker has opened its run, before it
	// records run:worker-started.
	WorkerStart = "worker-start"
	// BeforeExec fires when a plugin's binary has been verified (its open
	// file checked, plugin.OpenCached) and before the launch executes it;
	// the key is the plugin's name.
	BeforeExec = "before-exec"
	// Flood, armed from the environment, makes the worker write to its
	// console without end (the console budget test).
	Flood = "flood"
)

// Env is the environment variable that arms a point in a process built
// with the failpoints tag.
const Env = "OBVERSA_FAILPOINT"
