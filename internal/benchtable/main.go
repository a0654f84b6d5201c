// Command benchtable reads `go test -bench` output on stdin and prints one
// table: a row per benchmark with every metric it reported, and after a
// graph or start-up figure its ratio to the floors (BenchmarkFloor/*)
// measured in the same run (ratio.go). `make bench` uses it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

func main() {
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	samples := floorSamples(rows)
	if line := floorLine(samples); line != "" {
		fmt.Println(line)
	}
	write(os.Stdout, withRatios(rows, floors(samples)))
}

func write(w io.Writer, rows []row) {
	width := len("benchmark")
	for _, r := range rows {
		width = max(width, len(r.name))
	}
	fmt.Fprintf(w, "%-*s  %s\n", width, "benchmark", "metrics")
	for _, r := range rows {
		line := ""
		for i, m := range r.metrics {
			if i > 0 {
				line += "  "
			}
			line += fmt.Sprintf("%s %s", m.value, m.unit)
		}
		fmt.Fprintf(w, "%-*s  %s\n", width, r.name, line)
	}
}

func parse(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if row, ok := parseLine(sc.Text()); ok {
			rows = append(rows, row)
		}
	}
	return rows, sc.Err()
}
