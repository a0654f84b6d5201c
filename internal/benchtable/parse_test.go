package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
