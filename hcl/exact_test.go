package hcl

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/obversa/obversa/store"
)

// exactCases are number literals as a run file writes them; exact says
// whether the record keeps each unchanged.
var exactCases = []struct {
	lit   string
	exact bool
}{
	{"0", true}, {"-0", true}, {"1", true}, {"0.1", true}, {"-1.5", true}, {"1e21", true},
	{"1e-7", true}, {"123.456e2", true}, {"9007199254740991", true}, {"9007199254740992", true},
	{"1.7976931348623157e308", true}, {"5e-324", true}, {"100000000000000000000", true},
	{"9007199254740993", false}, {"18446744073709551615", false}, {"123456789012345678901234567890", false},
	{"1e400", false}, {"-1e400", false}, {"1e-400", false}, {"1.8e308", false}, {"0.1000000000000000055511151231257827", false},
}

// TestExactNumbersAgreeWithTheRecord: a number validate lets through is
// one the record keeps (its canonical form is exact), and one it refuses
// is one the record refuses too, judged on the JSON the plan is written
// with (go-cty's), as a run records it.
func TestExactNumbersAgreeWithTheRecord(t *testing.T) {
	for _, tt := range exactCases {
		v, err := cty.ParseNumberVal(tt.lit)
		if err != nil {
			t.Fatalf("%s: %v", tt.lit, err)
		}
		got := exactDouble(v.AsBigFloat())
		if got != tt.exact {
			t.Errorf("exactDouble(%s) = %v, want %v", tt.lit, got, tt.exact)
		}
		if rec := recordKeeps(t, v); rec != tt.exact {
			t.Errorf("the record keeps %s: %v, want %v", tt.lit, rec, tt.exact)
		}
	}
}

// recordKeeps reports whether the record takes v (marshalled as the plan
// is) as event data.
func recordKeeps(t *testing.T, v cty.Value) bool {
	t.Helper()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	sl, err := store.NewSealer(store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sl.Prepare([]store.NewEvent{{Type: "t", Data: json.RawMessage(b)}})
	if err != nil && !errors.Is(err, store.ErrNotCanonical) {
		t.Fatalf("Prepare(%s): %v", b, err)
	}
	return err == nil
}

// FuzzExactNumbers: validate's judgement of a number is the record's.
func FuzzExactNumbers(f *testing.F) {
	for _, tt := range exactCases {
		f.Add(tt.lit)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		v, err := cty.ParseNumberVal(lit)
		if err != nil || len(lit) > 400 {
			return
		}
		if got, rec := exactDouble(v.AsBigFloat()), recordKeeps(t, v); got != rec {
			t.Errorf("%q: validate says exact %v, the record keeps it %v", lit, got, rec)
		}
	})
}
