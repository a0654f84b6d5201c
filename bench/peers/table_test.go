package main

import (
	"strings"
	"testing"
)

const sampleRounds = `== round 1
# load average before the round: 1.00 2.00 3.00
BenchmarkChain200-2            	       3	 849738347 ns/op	       804.0 events	         1.890 ms/node	         3.848 wall-ms/node
BenchmarkFloor/fdatasync-2     	       3	  10100000 ns/op	         0.5037 ms
BenchmarkPGChain200Run-2       	       3	2634675094 ns/op	         8.490 ms/node	        12.01 wall-ms/node	         1.398 commit-ms
BenchmarkDBOSChain200 	3	4.245 ms/node
== round 2
BenchmarkChain200-2            	       3	 849738347 ns/op	         2.000 ms/node	         4.000 wall-ms/node
BenchmarkDBOSChain200 	3	5.000 ms/node
BenchmarkDBOSDAG1000FanOut32 	3	2.797 ms/node
`

func TestTable(t *testing.T) {
	rounds, err := parseRounds(strings.NewReader(sampleRounds))
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 2 {
		t.Fatalf("%d rounds, want 2", len(rounds))
	}
	var b strings.Builder
	writeTable(&b, rounds)
	got := b.String()
	for _, want := range []string{
		// DBOS ÷ obversa file and ÷ pg in round 1: 4.245/1.890, 4.245/8.490;
		// the round's fdatasync floor (Floor/fdatasync) on every workload.
		"| 1 | Chain200 | 1.890 / 3.848 | 8.490 / 12.010 | 4.245 | 2.246 | 0.500 | 0.504 | 1.398 |",
		"| 1 | DAG1000FanOut32 | - / - | - / - | - | - | - | 0.504 | - |",
		// Round 2 has no PostgreSQL figure and no DAG of ours.
		"| 2 | Chain200 | 2.000 / 4.000 | - / - | 5.000 | 2.500 | - | - | - |",
		"| 2 | DAG1000FanOut32 | - / - | - / - | 2.797 | - | - | - | - |",
		// Medians: of 2.246 and 2.500; of 0.500 alone.
		"| median | Chain200 | | | | 2.373 | 0.500 | | |",
		"| median | DAG1000FanOut32 | | | | - | - | | |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestParseBenchLine(t *testing.T) {
	tests := []struct {
		line, name string
		metrics    map[string]float64
		ok         bool
	}{
		{"BenchmarkChain200-2  3  1.5 ms/node  2 wall-ms/node", "Chain200", map[string]float64{"ms/node": 1.5, "wall-ms/node": 2}, true},
		{"BenchmarkDBOSChain200 \t3\t4.242 ms/node", "DBOSChain200", map[string]float64{"ms/node": 4.242}, true},
		{"BenchmarkA-b  3  1 ms/node", "A-b", map[string]float64{"ms/node": 1}, true},
		{"BenchmarkX-2  3  fast ms/node", "", nil, false},
		{"--- FAIL: BenchmarkX", "", nil, false},
		{"BenchmarkX-2  3", "", nil, false},
		{"PASS", "", nil, false},
	}
	for _, tt := range tests {
		name, m, ok := parseBenchLine(tt.line)
		if ok != tt.ok || name != tt.name || len(m) != len(tt.metrics) {
			t.Errorf("parseBenchLine(%q) = %q, %v, %v; want %q, %v, %v", tt.line, name, m, ok, tt.name, tt.metrics, tt.ok)
			continue
		}
		for u, v := range tt.metrics {
			if m[u] != v {
				t.Errorf("parseBenchLine(%q)[%s] = %v, want %v", tt.line, u, m[u], v)
			}
		}
	}
}

func FuzzParseRounds(f *testing.F) {
	f.Add(sampleRounds)
	f.Add("== round 1\nBenchmarkA-2 1 NaN ms/node\n")
	f.Fuzz(func(t *testing.T, s string) {
		rounds, err := parseRounds(strings.NewReader(s))
		if err != nil {
			return
		}
		var b strings.Builder
		writeTable(&b, rounds) // must not panic on anything parsed
		if got := strings.Count(b.String(), "\n"); got != 2+len(rounds)*len(workloads)+len(workloads) {
			t.Fatalf("%d table lines for %d rounds", got, len(rounds))
		}
	})
}
