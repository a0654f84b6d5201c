package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrVerdict is returned (wrapped) by ParseVerdict and BindingVerdict for a
// result that is not a verdict. The executor fails the review member with
// CodeVerdictInvalid and the error's message.
var ErrVerdict = errors.New("not a verdict")

// Verdict is what a review member returns (docs/run-file.md, "Loops"): an
// engine reviewer's structured output must be exactly this object, with
// status "pass" or "fail"; summary and findings are optional.
type Verdict struct {
	Status   string    `json:"status"`
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
}

// VerdictSchema is the JSON Schema (draft 2020-12) of Verdict, sent to an
// engine reviewer as its output schema.
var VerdictSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["status"],` +
	`"properties":{"status":{"enum":["pass","fail"]},"summary":{"type":"string"},` +
	`"findings":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["reviewer","evidence"],` +
	`"properties":{"reviewer":{"type":"string"},"evidence":{"type":"string"}}}}}}`)

// ParseVerdict reads an engine reviewer's result: the Verdict object as
// structured output, or a text result (a JSON string) whose whole text,
// trimmed of white space, is that object. Unknown members, a missing or
// other status, and findings without both strings are refused: the error
// wraps ErrVerdict and says what is wrong.
func ParseVerdict(result json.RawMessage) (Verdict, error) {
	raw := bytes.TrimSpace(result)
	var text string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		raw = []byte(strings.TrimSpace(text))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Verdict{}, fmt.Errorf("%w: the reviewer answered %s, not an object {status, summary, findings}", ErrVerdict, excerpt(raw))
	}
	var v struct {
		Status   *string `json:"status"`
		Summary  *string `json:"summary"`
		Findings []struct {
			Reviewer *string `json:"reviewer"`
			Evidence *string `json:"evidence"`
		} `json:"findings"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return Verdict{}, fmt.Errorf("%w: %v", ErrVerdict, err)
	}
	if dec.More() {
		return Verdict{}, fmt.Errorf("%w: text follows the object", ErrVerdict)
	}
	if v.Status == nil || (*v.Status != VerdictPass && *v.Status != VerdictFail) {
		return Verdict{}, fmt.Errorf("%w: status must be %q or %q", ErrVerdict, VerdictPass, VerdictFail)
	}
	out := Verdict{Status: *v.Status, Findings: []Finding{}}
	if v.Summary != nil {
		out.Summary = *v.Summary
	}
	for i, f := range v.Findings {
		if f.Reviewer == nil || f.Evidence == nil {
			return Verdict{}, fmt.Errorf("%w: findings[%d] needs reviewer and evidence strings", ErrVerdict, i)
		}
		out.Findings = append(out.Findings, Finding{Reviewer: *f.Reviewer, Evidence: *f.Evidence})
	}
	return out, nil
}

// BindingVerdict reads a binding reviewer's result, an object with a
// number exit_code (cmd-engine's {exit_code, stdout, stderr}): 0 passes;
// anything else fails with the tail of stderr — or of stdout when stderr
// is empty — as the one finding, reviewer member. A result without a
// whole-number exit_code is an error wrapping ErrVerdict.
func BindingVerdict(member string, result json.RawMessage) (Verdict, error) {
	var out struct {
		ExitCode *json.Number `json:"exit_code"`
		Stdout   string       `json:"stdout"`
		Stderr   string       `json:"stderr"`
	}
	if err := json.Unmarshal(result, &out); err != nil || out.ExitCode == nil {
		return Verdict{}, fmt.Errorf("%w: a binding reviewer's result must be an object with exit_code, got %s", ErrVerdict, excerpt(result))
	}
	code, err := out.ExitCode.Int64()
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: exit_code %s is not a whole number", ErrVerdict, *out.ExitCode)
	}
	if code == 0 {
		return Verdict{Status: VerdictPass, Summary: "exit code 0", Findings: []Finding{}}, nil
	}
	evidence := tail(out.Stderr)
	if evidence == "" {
		evidence = tail(out.Stdout)
	}
	summary := fmt.Sprintf("exit code %d", code)
	if evidence == "" {
		evidence = summary
	}
	return Verdict{Status: VerdictFail, Summary: summary, Findings: []Finding{{Reviewer: member, Evidence: evidence}}}, nil
}

// FailureVerdict is the verdict of a binding reviewer whose attempt failed
// with kind unknown — how a command binding reports a non-zero exit, its
// message holding the exit code and the output's tail: a failed review
// with the message as the one finding.
func FailureVerdict(member string, f *FailedData) Verdict {
	return Verdict{Status: VerdictFail, Summary: firstLine(f.Message),
		Findings: []Finding{{Reviewer: member, Evidence: tail(f.Message)}}}
}

// Outcome turns a verdict into the outcome of a review: a failure asks for
// a revision whose reason is the summary (or "the review failed").
func (v Verdict) Outcome() ReviewOutcome {
	o := ReviewOutcome{Status: v.Status, Summary: v.Summary}
	if v.Status != VerdictPass {
		reason := v.Summary
		if reason == "" {
			reason = "the review failed"
		}
		findings := v.Findings
		if findings == nil {
			findings = []Finding{}
		}
		o.Revision = &Revision{Reason: reason, Findings: findings}
	}
	return o
}

// FindingsText renders a failed review for loop.findings: one line per
// finding, "<reviewer>: <evidence>", or the revision's reason when it has
// no findings; "" for a review that passed.
func (o ReviewOutcome) FindingsText() string {
	if o.Revision == nil {
		return ""
	}
	if len(o.Revision.Findings) == 0 {
		return o.Revision.Reason
	}
	lines := make([]string, len(o.Revision.Findings))
	for i, f := range o.Revision.Findings {
		lines[i] = f.Reviewer + ": " + f.Evidence
	}
	return strings.Join(lines, "\n")
}

// tailBytes bounds a finding's evidence: the end of a command's output is
// where its failure is.
const tailBytes = 4096

// tail returns the last tailBytes bytes of s (cut at a line start when
// one is near, else at a rune start), trimmed of white space.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= tailBytes {
		return s
	}
	cut := len(s) - tailBytes
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < tailBytes/4 {
		cut += i + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return strings.TrimSpace(s[cut:])
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// excerpt shows the start of a value in an error message.
func excerpt(b []byte) string {
	s := string(b)
	if len(s) > 80 {
		cut := 77
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
}
