package graph

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		name   string
		result string
		want   *Verdict // nil: ErrVerdict
	}{
		{"structured pass", `{"status":"pass","summary":"ok"}`, &Verdict{Status: "pass", Summary: "ok", Findings: []Finding{}}},
		{"structured fail with findings", `{"status":"fail","summary":"s","findings":[{"reviewer":"lint","evidence":"no timeout"}]}`,
			&Verdict{Status: "fail", Summary: "s", Findings: []Finding{{Reviewer: "lint", Evidence: "no timeout"}}}},
		{"text holding the object", `" {\"status\":\"fail\"}\n"`, &Verdict{Status: "fail", Findings: []Finding{}}},
		{"prose", `"Looks good to me"`, nil},
		{"other status", `{"status":"ok"}`, nil},
		{"no status", `{"summary":"x"}`, nil},
		{"unknown member", `{"status":"pass","score":3}`, nil},
		{"finding without evidence", `{"status":"fail","findings":[{"reviewer":"x"}]}`, nil},
		{"two objects", `"{\"status\":\"pass\"} {\"status\":\"fail\"}"`, nil},
		{"array", `[{"status":"pass"}]`, nil},
		{"null", `null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVerdict(json.RawMessage(tt.result))
			if tt.want == nil {
				if !errors.Is(err, ErrVerdict) {
					t.Fatalf("ParseVerdict = %+v, %v; want ErrVerdict", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindingVerdict(t *testing.T) {
	long := strings.Repeat("x", 5000) + "\nlast line"
	tests := []struct {
		name, result string
		status       string
		evidence     string
		bad          bool
	}{
		{name: "exit 0 passes", result: `{"exit_code":0,"stdout":"ok","stderr":""}`, status: "pass"},
		{name: "stderr tail is the finding", result: `{"exit_code":1,"stdout":"out","stderr":"FAIL: x\n"}`, status: "fail", evidence: "FAIL: x"},
		{name: "stdout when stderr is empty", result: `{"exit_code":2,"stdout":"--- FAIL: TestX","stderr":""}`, status: "fail", evidence: "--- FAIL: TestX"},
		{name: "the exit code when both are empty", result: `{"exit_code":3}`, status: "fail", evidence: "exit code 3"},
		{name: "a long output keeps its end", result: `{"exit_code":1,"stderr":` + string(mustJSONt(long)) + `}`, status: "fail", evidence: "last line"},
		{name: "no exit code", result: `{"stdout":"x"}`, bad: true},
		{name: "not an object", result: `"text"`, bad: true},
		{name: "fractional exit code", result: `{"exit_code":1.5}`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := BindingVerdict("check", json.RawMessage(tt.result))
			if tt.bad {
				if !errors.Is(err, ErrVerdict) {
					t.Fatalf("BindingVerdict = %+v, %v; want ErrVerdict", v, err)
				}
				return
			}
			if err != nil || v.Status != tt.status {
				t.Fatalf("BindingVerdict = %+v, %v; want status %s", v, err, tt.status)
			}
			if tt.evidence != "" && (len(v.Findings) != 1 || !strings.HasSuffix(v.Findings[0].Evidence, tt.evidence) || len(v.Findings[0].Evidence) > tailBytes) {
				t.Fatalf("findings %+v; want one ending in %q within %d bytes", v.Findings, tt.evidence, tailBytes)
			}
		})
	}
}

func TestFindingsText(t *testing.T) {
	v := Verdict{Status: VerdictFail, Summary: "two problems", Findings: []Finding{{"a", "x"}, {"b", "y"}}}
	if got := v.Outcome().FindingsText(); got != "a: x\nb: y" {
		t.Errorf("FindingsText = %q", got)
	}
	if got := (Verdict{Status: VerdictFail}).Outcome().FindingsText(); got != "the review failed" {
		t.Errorf("FindingsText without findings = %q", got)
	}
	if got := (Verdict{Status: VerdictPass}).Outcome(); got.Revision != nil || got.FindingsText() != "" {
		t.Errorf("a passing outcome %+v", got)
	}
}

func mustJSONt(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// FuzzParseVerdict: a verdict parsed from any bytes has a valid status and
// re-encodes to a result that parses to the same verdict.
func FuzzParseVerdict(f *testing.F) {
	f.Add([]byte(`{"status":"fail","summary":"s","findings":[{"reviewer":"r","evidence":"e"}]}`))
	f.Add([]byte(`"{\"status\":\"pass\"}"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVerdict(b)
		if err != nil {
			if !errors.Is(err, ErrVerdict) {
				t.Fatalf("error %v does not wrap ErrVerdict", err)
			}
			return
		}
		if v.Status != VerdictPass && v.Status != VerdictFail {
			t.Fatalf("status %q", v.Status)
		}
		again, err := ParseVerdict(mustJSONt(v))
		if err != nil || !cmp.Equal(v, again) {
			t.Fatalf("re-encoded %+v parses to %+v, %v", v, again, err)
		}
		_, _ = BindingVerdict("m", b)
	})
}
