// Package ui is the web run browser behind `obversa ui` (docs/ui.md): an
// HTTP server that shows the runs of one storage directory, each run's
// graph with its nodes coloured by state, its timeline of events, each
// node's attempts, results and artifacts, and what its agents stream, live
// while the run runs; and, unless read-only, lets a person approve or deny
// a waiting position and resume a paused run.
//
// It decides nothing itself. What a run looks like comes from the shared
// read model (host/runview) over the one fold of the record
// (host/runstate), the graph from host/diagram, the agents' output from
// stream.jsonl (host/stream). Steering goes through the code the CLI runs:
// an approval is watchdog.Approve (the run's lock and a conditional
// append, or a request queued for a live worker), and carrying a run on
// starts `obversa resume` as its own process, the command the page shows.
//
// Live pages are fed by server-sent events. Each run has at most one
// follower of its files however many pages watch it (follow.go), and the
// runs list has one shared poller (runs.go). A run page is sent its view
// whole once, then what changed in it (live.go): the server's fold is the
// only one, and the page only puts the changed parts in place.
//
// Safety (docs/ui.md): the server listens on loopback unless given a
// token that every request must then carry; it reads nothing outside the
// storage directory — a run is named by an id that must be in the
// storage's listing, files are opened only at fixed names inside a run
// directory whose real path lies inside the storage's, and any request
// path that is not clean is 404; POSTs need a per-page token and a
// same-origin request (403 otherwise); every page is served with a strict
// Content-Security-Policy (scripts only from the server itself, no inline
// script); and known secrets are redacted from everything it sends, as
// the CLI redacts them.
package ui
