package conformance

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is the outcome of one case.
type Status string

// Case outcomes.
const (
	// Pass: the plugin did what the case expects.
	Pass Status = "pass"
	// Fail: it did not; Result.Seen says what happened instead.
	Fail Status = "fail"
	// Skip: the case did not apply or could not run; Result.Seen says why
	// (a capability the plugin does not declare, a scenario it cannot be
	// asked for, a case it depends on that failed, or Options.Only).
	Skip Status = "skip"
)

// Result is the outcome of one case.
type Result struct {
	// Case is the case name ("run.cancel"); see Cases.
	Case string `json:"case"`
	// Status is pass, fail or skip.
	Status Status `json:"status"`
	// Expected says what the case checks.
	Expected string `json:"expected"`
	// Seen says what the plugin did, or why the case was skipped.
	Seen string `json:"seen"`
	// Duration is the case's wall time.
	Duration time.Duration `json:"duration_ns"`
}

// Report is the outcome of a check.
type Report struct {
	// Binary is the absolute path of the checked binary; SHA256 its digest
	// (lower-case hex), which is what a run would pin.
	Binary string `json:"binary"`
	SHA256 string `json:"sha256"`
	// Type is the plugin type checked: engine or node.
	Type string `json:"type"`
	// Plugin is the name and version the plugin describes itself with,
	// empty when Describe could not be called.
	Plugin string `json:"plugin"`
	// ScenarioControl says how the kit asked for scenarios: "service" (the
	// Conformance service), "requests" (Options.Scenarios) or "none".
	ScenarioControl string `json:"scenario_control"`
	// Results holds one entry per case, in the order of Cases.
	Results []Result `json:"results"`
}

// Failed reports whether any case failed.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return true
		}
	}
	return false
}

// Count returns how many cases ended with status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Result returns the result of the named case, or false.
func (r *Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Case == name {
			return res, true
		}
	}
	return Result{}, false
}

// WriteTable writes the report as a table, one case a line (case, result,
// what was expected, what was seen), after a header naming the plugin and
// before a summary line. It returns the first write error.
func (r *Report) WriteTable(w io.Writer) error {
	plugin := r.Plugin
	if plugin == "" {
		plugin = "(no Describe answer)"
	}
	if _, err := fmt.Fprintf(w, "plugin %s (%s)\nbinary %s\nsha256 %s\nscenario control: %s\n\n",
		plugin, r.Type, r.Binary, r.SHA256, r.ScenarioControl); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tEXPECTED\tSEEN")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.Case, strings.ToUpper(string(res.Status)), oneLine(res.Expected), oneLine(res.Seen))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", r.Count(Pass), r.Count(Fail), r.Count(Skip))
	return err
}

// oneLine keeps a table cell on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
