// Package runview says what a run and its nodes look like to a person:
// the summaries behind `obversa runs`, `obversa show`, `obversa graph RUN`,
// the live view of `obversa run`, and any other front end (a web browser
// of runs) that shows the same things. Everything here is read from the
// shared fold of the record (host/runstate) and, for what agents are
// writing now, from stream.jsonl (host/stream); nothing replays the record
// a second way or decides anything.
//
//   - Summary is one run in a list: id, phase, start, elapsed time,
//     done/total nodes, usage.
//   - Node is one node in detail: status, attempts, its final text or a
//     command's stdout and stderr tails, failure or pause, usage, engine
//     calls, artifacts with their digests.
//   - Live is what a live view shows while a run runs: the summary, one
//     entry per attempt in flight with its elapsed time and the last line
//     of its streamed text, and the failures and pauses so far.
//   - Groups says where each loop (its round, its last verdict) and each
//     for_each node (its instances passed, failed, running) stands. A
//     for_each node and a loop count as one node in Counts; their units —
//     instances and each round's members — are Nodes of their own, named
//     "<node>[<key>]" and "<loop>/<round>/<member>" (Unit, NodeOf).
//   - Suggest finds the position or node a mistyped argument meant.
//
// Usage totals follow the record's rule: unknown is never zero, so a total
// over calls of which one did not report usage is unknown.
package runview
