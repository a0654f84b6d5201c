package main

import (
	"strconv"
	"strings"
)

type metric struct {
	value string
	unit  string
}

type row struct {
	name    string
	metrics []metric
}

// parseLine parses one benchmark result line:
// "BenchmarkX-2   <iterations>   <value> <unit>   <value> <unit> ...".
// The GOMAXPROCS suffix is dropped and metrics keep their reported order.
func parseLine(line string) (row, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return row{}, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return row{}, false
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	r := row{name: name}
	for i := 2; i+1 < len(f); i += 2 {
		if _, err := strconv.ParseFloat(f[i], 64); err != nil {
			return row{}, false
		}
		r.metrics = append(r.metrics, metric{value: f[i], unit: f[i+1]})
	}
	return r, true
}
