// Command peers compares Obversa's graph benchmarks with DBOS Transact
// for Go on the same workloads and the same PostgreSQL (`make
// bench-peers`, scripts/bench-peers.sh; docs/architecture.md#performance-budget). It is a
// module of its own so that DBOS stays out of Obversa's go.mod.
//
//	peers dbos -db postgres://… [-reps 3]   run the DBOS workloads, print `go test -bench` lines
//	peers table < rounds.txt                 print the table of one run's rounds with ratios
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "dbos":
		err = runDBOS(os.Args[2:], os.Stdout)
	case "table":
		var rounds []round
		if rounds, err = parseRounds(os.Stdin); err == nil {
			if len(rounds) == 0 {
				err = fmt.Errorf("table: no \"== round N\" line on stdin")
			} else {
				writeTable(os.Stdout, rounds)
			}
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peers dbos -db postgres://… [-reps N] | peers table < rounds.txt")
	os.Exit(2)
}
