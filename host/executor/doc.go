// Package executor runs a graph from its record (docs/architecture.md#the-executor). One Executor
// lives in a worker process: it folds the record into graph state, carries
// on any occurrence a crash left in flight (by the saved retry_safe), then
// loops — ask the graph for its next decision, record it, run the attempts
// through the run's plugins, record each result — until the graph is
// complete, failed or waiting for a person.
//
// Durability: every decision is appended before it is acted on. A node's
// result, the dispatch decision it unlocks and the new attempt-started
// records share one append (one fdatasync), and an engine call's
// graph:engine-attempt-recorded is durable before fallback routing or the
// result is used.
//
// Concurrency: one goroutine (the loop) owns the state and the record's
// revision; each attempt runs on an attempt goroutine (one per attempt in
// flight, reused by later attempts until the loop ends) and hands events
// to the loop, waiting for them to be durable when they gate an effect.
package executor
