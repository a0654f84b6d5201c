package main

import (
	"fmt"
	"strconv"
	"strings"
)

// floorPrefix names the benchmarks that measure a floor: "Floor/<name>",
// each reporting one "ms" metric (cmd/obversa's BenchmarkFloor).
const floorPrefix = "Floor/"

// A ratio rule divides every metric of unit by the sum of the named floors
// and reports the quotient as a metric of its own unit, placed right after
// the metric it divides (docs/decisions.md, "Benchmarks").
type ratioRule struct {
	unit   string
	floors []string
	as     string
}

// ratioRules: a graph node against one durable append and one plugin call;
// start-up against one plugin launch.
var ratioRules = []ratioRule{
	{unit: "ms/node", floors: []string{"fdatasync", "grpc-round-trip"}, as: "x(fdatasync+rpc)"},
	{unit: "start-ms", floors: []string{"plugin-launch"}, as: "x-launch"},
}

// floors returns the floor values (ms) the rows hold, by name.
func floors(rows []row) map[string]float64 {
	out := map[string]float64{}
	for _, r := range rows {
		name, ok := strings.CutPrefix(r.name, floorPrefix)
		if !ok {
			continue
		}
		for _, m := range r.metrics {
			if m.unit != "ms" {
				continue
			}
			if v, err := strconv.ParseFloat(m.value, 64); err == nil && v > 0 {
				out[name] = v
			}
		}
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

// floorLine says which floors the ratios divide by, in rule order.
func floorLine(fl map[string]float64) string {
	var parts []string
	seen := map[string]bool{}
	for _, rule := range ratioRules {
		for _, n := range rule.floors {
			if v, ok := fl[n]; ok && !seen[n] {
				seen[n] = true
				parts = append(parts, fmt.Sprintf("%s %.3g ms", n, v))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "floors measured in this run: " + strings.Join(parts, ", ")
}
