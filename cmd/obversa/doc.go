// Command obversa is the Obversa CLI: `obversa run run.hcl` validates a run
// file, pins its plugins, records the run and supervises a worker that
// executes the graph; status, events, verify, validate and plugin work on
// run files and stored runs. One file per command.
//
// Exit status: 0 complete, 1 failed, 2 usage error (including a run file or
// plugin refused before the run was created), 3 paused.
package main
