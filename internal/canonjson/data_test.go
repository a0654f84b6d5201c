package canonjson

import (
	"math"
	"strconv"
	"testing"
)

// TestRFC8785Examples runs the examples of RFC 8785 §3.2.2 (serialization)
// and §3.2.3 (member sorting) through the canonicaliser and the checker.
func TestRFC8785Examples(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"§3.2.2", `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"§3.2.3", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
			"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	}
	for _, tt := range tests {
		got, err := canonicalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: canonicalize = %s, %v\nwant %s", tt.name, got, err, tt.want)
		}
		if !isCanonicalJSON([]byte(tt.want)) || isCanonicalJSON([]byte(tt.in)) {
			t.Errorf("%s: isCanonicalJSON(output) = %v, (input) = %v", tt.name, isCanonicalJSON([]byte(tt.want)), isCanonicalJSON([]byte(tt.in)))
		}
		// Event data must keep its numbers' values: §3.2.2's input has
		// numbers that canonicalisation changes (333333333.33333329), so
		// the record refuses it; §3.2.3's is stored canonicalised.
		c, err := canonicalData([]byte(tt.in))
		if tt.name == "§3.2.2" && err == nil {
			t.Errorf("%s: canonicalData accepted numbers it changes", tt.name)
		}
		if tt.name == "§3.2.3" && (err != nil || string(c) != tt.want) {
			t.Errorf("%s: canonicalData = %s, %v", tt.name, c, err)
		}
	}
}

// TestRFC8785Numbers runs the number serialization samples of RFC 8785
// Appendix B (IEEE 754 bits → ECMAScript text).
func TestRFC8785Numbers(t *testing.T) {
	t.Parallel()
	samples := []struct{ bits, want string }{
		{"0000000000000000", "0"}, {"8000000000000000", "0"},
		{"0000000000000001", "5e-324"}, {"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"}, {"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"}, {"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"}, {"44b52d02c7e14af6", "1e+23"}, {"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"}, {"444b1ae4d6e2ef4f", "999999999999999900000"}, {"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"}, {"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"}, {"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"}, {"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"}, {"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, s := range samples {
		u, _ := strconv.ParseUint(s.bits, 16, 64)
		f := math.Float64frombits(u)
		// A literal that parses to exactly this double, in another form.
		lit := strconv.FormatFloat(f, 'e', -1, 64)
		got, err := canonicalize([]byte(lit))
		if err != nil || string(got) != s.want {
			t.Errorf("%s (%s): canonical %s, %v; want %s", s.bits, lit, got, err, s.want)
		}
		if s.want != "0" || s.bits == "0000000000000000" {
			if !isCanonicalJSON([]byte(s.want)) {
				t.Errorf("isCanonicalJSON(%s) = false", s.want)
			}
		}
	}
}

func TestCheckNumberExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lit string
		ok  bool
	}{
		{"0", true}, {"-0", true}, {"0.0", true}, {"0e99999999999999999999", true}, {"1", true}, {"1.0", true},
		{"1E2", true}, {"100e-2", true}, {"0.1", true}, {"4.50", true}, {"9007199254740992", true},
		{"9007199254740993", false}, {"12345678901234567890", false}, {"1152921504606846976", false},
		{"1e400", false}, {"-1e400", false}, {"1e-400", false}, {"0.30000000000000000001", false},
		{"333333333.33333329", false}, {"1.5e300", true}, {"5e-324", true},
	}
	for _, tt := range tests {
		if err := checkNumberExact(tt.lit); (err == nil) != tt.ok {
			t.Errorf("checkNumberExact(%s) = %v, want ok=%v", tt.lit, err, tt.ok)
		}
	}
}
