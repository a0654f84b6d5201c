package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkScale runs, once each, a 10 000-node DAG and a 33 400-node DAG
// (fan-out 32), whose record holds over 100 000 events, and measures what
// reads their records cost: the fold, `obversa status` and `obversa
// events` (whole processes, the median of three; wall and CPU time), and
// the peak resident set of the largest process of the run. make bench runs
// it with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{10_000, 33_400} {
		b.Run(fmt.Sprintf("DAG%d", n), func(b *testing.B) {
			benchScale(b, n)
		})
	}
}

func benchScale(b *testing.B, n int) {
	runFile := graphRunFile(b, n, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	}, false)
	dir := filepath.Dir(runFile)
	if r := obversa(b, dir, "plugin", "lock", runFile); r.code != 0 {
		b.Fatalf("lock: %s", r.stderr)
	}
	var last graphRun
	var span, status, statusCPU, events, eventsCPU time.Duration
	var peak int64
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("s%d", i)
		last = runGraph(b, dir, runFile, id, "")
		span += last.span
		peak = max(peak, last.peakRSS)
		w, c := medianCLI(b, dir, "status", id)
		status, statusCPU = status+w, statusCPU+c
		w, c = medianCLI(b, dir, "events", id)
		events, eventsCPU = events+w, eventsCPU+c
	}
	b.ReportMetric(ms(span)/float64(b.N*n), "ms/node")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(last.events), "events")
	b.ReportMetric(ms(last.fold), "fold-ms")
	b.ReportMetric(ms(status)/float64(b.N), "status-ms")
	b.ReportMetric(ms(statusCPU)/float64(b.N), "status-cpu-ms")
	b.ReportMetric(ms(events)/float64(b.N), "events-ms")
	b.ReportMetric(ms(eventsCPU)/float64(b.N), "events-cpu-ms")
}

// medianCLI runs `obversa <verb> <run>` three times, output discarded, and
// returns the median wall time and the median CPU time (user + system: on
// a busy machine the wall time mostly measures the others).
func medianCLI(b *testing.B, dir, verb, id string) (wall, cpu time.Duration) {
	b.Helper()
	var w, c []time.Duration
	for range 3 {
		cmd := exec.Command(filepath.Join(binDir, "obversa"), verb, id)
		cmd.Dir = dir
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v: %s", verb, err, errb.String())
		}
		w = append(w, time.Since(start))
		c = append(c, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(w)
	slices.Sort(c)
	return w[1], c[1]
}
