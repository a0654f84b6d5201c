package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want row
		ok   bool
	}{
		{"metrics", "BenchmarkChain/nodes=200-2   1   123456 ns/op   0.41 ms/node", row{name: "Chain/nodes=200", metrics: []metric{{"123456", "ns/op"}, {"0.41", "ms/node"}}}, true},
		{"no suffix", "BenchmarkRaw 10 5.0 ns/op", row{name: "Raw", metrics: []metric{{"5.0", "ns/op"}}}, true},
		{"not a result", "goos: linux", row{}, false},
		{"odd fields", "BenchmarkX-2 1 5 ns/op extra", row{}, false},
		{"bad count", "BenchmarkX-2 many 5 ns/op", row{}, false},
		{"bad value", "BenchmarkX-2 1 fast ns/op", row{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseLine(tt.line)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(row{}, metric{})); diff != "" {
				t.Fatalf("row (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	rows, err := parse(strings.NewReader("goos: linux\nBenchmarkA-2 1 10 ns/op\nBenchmarkLonger-2 3 2 ms/node 4 x\nPASS\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	write(&b, rows)
	want := "benchmark  metrics\nA          10 ns/op\nLonger     2 ms/node  4 x\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("table (-want +got):\n%s", diff)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("BenchmarkChain-2 1 123 ns/op 0.4 ms/node")
	f.Add("Benchmark")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := parseLine(line)
		if !ok {
			return
		}
		// What was accepted prints back as a line that parses to the same row.
		var b strings.Builder
		b.WriteString("Benchmark" + r.name + " 1")
		for _, m := range r.metrics {
			b.WriteString(" " + m.value + " " + m.unit)
		}
		again, ok := parseLine(b.String())
		if !ok || !reflect.DeepEqual(again, r) {
			t.Fatalf("%q parsed to %+v; printed back as %q it parses to %+v (ok %v)", line, r, b.String(), again, ok)
		}
	})
}

func TestRatios(t *testing.T) {
	in := "BenchmarkFloor/fdatasync-2 3 1 ns/op 0.2 ms\n" +
		"BenchmarkFloor/fdatasync-prezeroed-2 3 1 ns/op 0.1 ms\n" +
		"BenchmarkFloor/grpc-round-trip-2 3 1 ns/op 0.25 ms\n" +
		"BenchmarkFloor/plugin-launch-2 3 1 ns/op 20 ms\n" +
		"BenchmarkChain200-2 3 1 ns/op 0.75 ms/node 3 wall-ms/node 50 start-ms\n" +
		"BenchmarkAppendDurable-2 100 1 ns/op 1.1 ratio-p50\n" +
		"BenchmarkFloorAfter/fdatasync-2 3 1 ns/op 0.3 ms\n" +
		"BenchmarkFloorAfter/fdatasync-prezeroed-2 3 1 ns/op 0.15 ms\n" +
		"BenchmarkFloorAfter/grpc-round-trip-2 3 1 ns/op 0.25 ms\n" +
		"BenchmarkFloorAfter/plugin-launch-2 3 1 ns/op 20 ms\n"
	rows, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	samples := floorSamples(rows)
	wantSamples := map[string][]float64{"fdatasync": {0.2, 0.3}, "fdatasync-prezeroed": {0.1, 0.15},
		"grpc-round-trip": {0.25, 0.25}, "plugin-launch": {20, 20}}
	if diff := cmp.Diff(wantSamples, samples); diff != "" {
		t.Fatalf("floor samples (-want +got):\n%s", diff)
	}
	// The ratios divide by the mean of the samples before and after.
	fl := floors(samples)
	if diff := cmp.Diff(map[string]float64{"fdatasync": 0.25, "fdatasync-prezeroed": 0.125, "grpc-round-trip": 0.25, "plugin-launch": 20}, fl,
		cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Fatalf("floors (-want +got):\n%s", diff)
	}
	got := withRatios(rows, fl)
	want := []metric{{"1", "ns/op"}, {"0.75", "ms/node"}, {"1.50", "x(fdatasync+rpc)"}, {"2.00", "x(prezeroed+rpc)"},
		{"3", "wall-ms/node"}, {"50", "start-ms"}, {"2.50", "x-launch"}}
	if diff := cmp.Diff(want, got[4].metrics, cmp.AllowUnexported(metric{})); diff != "" {
		t.Fatalf("chain metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rows[5], got[5], cmp.AllowUnexported(row{}, metric{})); diff != "" {
		t.Fatalf("a row without a ruled unit changed (-want +got):\n%s", diff)
	}
	// Without the floors, no ratio is invented.
	if bare := withRatios(rows[4:5], map[string]float64{"fdatasync": 0.25}); len(bare[0].metrics) != 4 {
		t.Fatalf("ratios without floors: %+v", bare[0].metrics)
	}
	wantLine := "floors measured in this run, the mean of the samples before and after the graph benchmarks (each in parentheses): " +
		"fdatasync 0.25 ms (0.2, 0.3), grpc-round-trip 0.25 ms (0.25, 0.25), fdatasync-prezeroed 0.125 ms (0.1, 0.15), plugin-launch 20 ms (20, 20)"
	if got := floorLine(samples); got != wantLine {
		t.Fatalf("floor line\n%q, want\n%q", got, wantLine)
	}
	// A run that sampled the floors once says so and prints no samples.
	once := floorSamples(rows[:4])
	if want := "floors measured in this run: fdatasync 0.2 ms, grpc-round-trip 0.25 ms, fdatasync-prezeroed 0.1 ms, plugin-launch 20 ms"; floorLine(once) != want {
		t.Fatalf("floor line %q, want %q", floorLine(once), want)
	}
}
