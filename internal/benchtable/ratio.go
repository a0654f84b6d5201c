package main

import (
	"fmt"
	"strconv"
	"strings"
)

// floorPrefixes name the benchmarks that measure a floor: "Floor/<name>"
// before the graph benchmarks and "FloorAfter/<name>" after them, each
// reporting one "ms" metric (cmd/obversa's BenchmarkFloor and
// BenchmarkFloorAfter).
var floorPrefixes = []string{"Floor/", "FloorAfter/"}

// A ratio rule divides every metric of unit by the sum of the named floors
// and reports the quotient as a metric of its own unit, placed right after
// the metric it divides (docs/decisions.md, "Benchmarks").
type ratioRule struct {
	unit   string
	floors []string
	as     string
}

// ratioRules: a graph node against one durable append and one plugin call
// (the target's measure), and against one write over a pre-zeroed region
// and one plugin call (what a store with a pre-zeroed tail pays per
// append); start-up against one plugin launch.
var ratioRules = []ratioRule{
	{unit: "ms/node", floors: []string{"fdatasync", "grpc-round-trip"}, as: "x(fdatasync+rpc)"},
	{unit: "ms/node", floors: []string{"fdatasync-prezeroed", "grpc-round-trip"}, as: "x(prezeroed+rpc)"},
	{unit: "start-ms", floors: []string{"plugin-launch"}, as: "x-launch"},
}

// floorSamples returns the floor samples (ms) the rows hold, by name, in
// the order the rows hold them.
func floorSamples(rows []row) map[string][]float64 {
	out := map[string][]float64{}
	for _, r := range rows {
		name, ok := cutFloor(r.name)
		if !ok {
			continue
		}
		for _, m := range r.metrics {
			if m.unit != "ms" {
				continue
			}
			if v, err := strconv.ParseFloat(m.value, 64); err == nil && v > 0 {
				out[name] = append(out[name], v)
			}
		}
	}
	return out
}

// cutFloor returns the floor's name if row name is a floor benchmark.
func cutFloor(name string) (string, bool) {
	for _, p := range floorPrefixes {
		if n, ok := strings.CutPrefix(name, p); ok {
			return n, true
		}
	}
	return "", false
}

// floors returns each floor's value (ms) the ratios divide by: the mean
// of its samples.
func floors(samples map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	for name, vs := range samples {
		sum := 0.0
		for _, v := range vs {
			sum += v
		}
		out[name] = sum / float64(len(vs))
	}
	return out
}

// withRatios returns the rows with each rule's quotient added after the
// metric it divides; a rule whose floors the run did not measure adds
// nothing.
func withRatios(rows []row, fl map[string]float64) []row {
	out := make([]row, 0, len(rows))
	for _, r := range rows {
		nr := row{name: r.name}
		for _, m := range r.metrics {
			nr.metrics = append(nr.metrics, m)
			for _, rule := range ratioRules {
				if m.unit != rule.unit {
					continue
				}
				if q, ok := divide(m.value, rule.floors, fl); ok {
					nr.metrics = append(nr.metrics, metric{value: q, unit: rule.as})
				}
			}
		}
		out = append(out, nr)
	}
	return out
}

func divide(value string, names []string, fl map[string]float64) (string, bool) {
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return "", false
	}
	sum := 0.0
	for _, n := range names {
		f, ok := fl[n]
		if !ok {
			return "", false
		}
		sum += f
	}
	return fmt.Sprintf("%.2f", v/sum), true
}

// floorLine says which floors the ratios divide by, in rule order: each
// floor's mean and, when it was sampled more than once, the samples.
func floorLine(samples map[string][]float64) string {
	fl := floors(samples)
	var parts []string
	seen := map[string]bool{}
	several := false
	for _, rule := range ratioRules {
		for _, n := range rule.floors {
			v, ok := fl[n]
			if !ok || seen[n] {
				continue
			}
			seen[n] = true
			part := fmt.Sprintf("%s %.3g ms", n, v)
			if vs := samples[n]; len(vs) > 1 {
				several = true
				each := make([]string, len(vs))
				for i, s := range vs {
					each[i] = fmt.Sprintf("%.3g", s)
				}
				part += " (" + strings.Join(each, ", ") + ")"
			}
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	head := "floors measured in this run: "
	if several {
		head = "floors measured in this run, the mean of the samples before and after the graph benchmarks (each in parentheses): "
	}
	return head + strings.Join(parts, ", ")
}
