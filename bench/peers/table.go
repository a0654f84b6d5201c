package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A workload of the comparison and the benchmarks that measure it.
type workload struct {
	label                string
	ours, oursPG, theirs string // benchmark names without "Benchmark" and the -N suffix
}

var workloads = []workload{
	{"Chain200", "Chain200", "PGChain200Run", "DBOSChain200"},
	{"DAG1000FanOut32", "DAG1000FanOut32", "PGDAG1000FanOut32", "DBOSDAG1000FanOut32"},
}

// round is what one round measured: per benchmark, its metrics by unit.
type round map[string]map[string]float64

// parseRounds reads the output of the rounds: "== round N" lines, each
// followed by `go test -bench` result lines (ours, and `peers dbos`'s in
// the same form).
func parseRounds(r io.Reader) ([]round, error) {
	var rounds []round
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "== round ") {
			rounds = append(rounds, round{})
			continue
		}
		name, metrics, ok := parseBenchLine(line)
		if !ok || len(rounds) == 0 {
			continue
		}
		rounds[len(rounds)-1][name] = metrics
	}
	return rounds, sc.Err()
}

// parseBenchLine reads "BenchmarkName-2  3  1.23 ms/node  4.5 wall-ms/node …".
func parseBenchLine(line string) (string, map[string]float64, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", nil, false
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	m := map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		m[f[i+1]] = v
	}
	return name, m, true
}

// writeTable prints, per round and workload, ms per node of Obversa on
// the file backend and on PostgreSQL (the span from the first dispatch to
// the result in the record; the whole command's wall time after the
// slash) and of DBOS (workflow start to result), and the ratios DBOS ÷
// Obversa of the spans measured in that round; then the median of each
// ratio over the rounds. Beside them, the floors measured in the same
// round: write+fdatasync of a line (fdatasync ms, BenchmarkFloor/fdatasync)
// and a one-row INSERT committed on its own (pg commit ms). A missing
// measurement prints as "-".
func writeTable(w io.Writer, rounds []round) {
	fmt.Fprintln(w, "| round | workload | obversa file ms/node (span / wall) | obversa pg ms/node (span / wall) | DBOS ms/node | DBOS ÷ obversa file | DBOS ÷ obversa pg | fdatasync ms | pg commit ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	ratios := map[string][]float64{}
	for i, r := range rounds {
		for _, wl := range workloads {
			o, p, d := r[wl.ours], r[wl.oursPG], r[wl.theirs]
			rf, rp := ratio(d["ms/node"], o["ms/node"]), ratio(d["ms/node"], p["ms/node"])
			if rf > 0 {
				ratios[wl.label+" file"] = append(ratios[wl.label+" file"], rf)
			}
			if rp > 0 {
				ratios[wl.label+" pg"] = append(ratios[wl.label+" pg"], rp)
			}
			fmt.Fprintf(w, "| %d | %s | %s / %s | %s / %s | %s | %s | %s | %s | %s |\n", i+1, wl.label,
				num(o["ms/node"]), num(o["wall-ms/node"]), num(p["ms/node"]), num(p["wall-ms/node"]), num(d["ms/node"]),
				num(rf), num(rp), num(r["Floor/fdatasync"]["ms"]), num(p["commit-ms"]))
		}
	}
	for _, wl := range workloads {
		fmt.Fprintf(w, "| median | %s | | | | %s | %s | | |\n", wl.label, num(median(ratios[wl.label+" file"])), num(median(ratios[wl.label+" pg"])))
	}
}

// ratio is a ÷ b, 0 when either is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

func num(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
