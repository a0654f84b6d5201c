package canonjson

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// canonicalize returns the RFC 8785 canonical form of the JSON text raw,
// using the maintained JCS implementation github.com/gowebpki/jcs.
func canonicalize(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errNotExact says a number cannot be stored without changing its value.
var errNotExact = errors.New("a number cannot be represented exactly as an IEEE 754 double " +
	"(RFC 8785 §3.2.2.3 would change its value); store it as a string")

// canonicalData turns event data (any JSON text) into the bytes the record
// stores: its RFC 8785 canonical form. It refuses data whose canonical form
// would not mean the same thing — a number that is not exactly an IEEE 754
// double's shortest form, such as an int64 above 2^53 (I-JSON, RFC 7493
// §2.2) — so that canonicalisation never loses information and an edit of
// any stored byte changes the digest. The canonical form comes from the JCS
// library, or from one of two fast paths whose output is provably the
// library's (see canonicalDataOf; FuzzCanonicalData checks it). Errors never
// quote the data.
func canonicalData(raw []byte) ([]byte, error) {
	return canonicalDataOf(raw, false)
}

// canonicalDataOf is canonicalData; valid says raw is known to be valid
// JSON (encoding/json produced it), which saves a validation pass.
func canonicalDataOf(raw []byte, valid bool) ([]byte, error) {
	if isCanonicalJSON(raw) {
		// Already canonical (a map, or JSON built canonically): its numbers
		// are their own canonical form, so nothing can change.
		return raw, nil
	}
	if out, ok := sortMembers(raw); ok && isCanonicalJSON(out) {
		// Canonical but for member order (a marshalled struct): sorting the
		// members is all the library would do. Numbers and strings are the
		// input's own, and canonical, so nothing else can change.
		return out, nil
	}
	if !valid && !json.Valid(raw) {
		return nil, errors.New("data is not valid JSON")
	}
	if err := checkNumbersExact(raw); err != nil {
		return nil, err
	}
	out, err := canonicalize(raw)
	if err != nil {
		// The library's messages may quote a fragment of the input; the data
		// may hold a secret, so the message is not passed on.
		return nil, errors.New("data cannot be put in RFC 8785 canonical form (not I-JSON: RFC 7493)")
	}
	return out, nil
}

// checkNumbersExact walks the number literals of valid JSON text raw and
// checks that each has the same decimal value as its canonical form.
func checkNumbersExact(raw []byte) error {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			i = skipString(raw, i)
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if err := checkNumberExact(string(raw[i:j])); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// skipString returns the index just past the JSON string starting at raw[i]
// (which is '"'), or len(raw) if it is unterminated.
func skipString(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(raw)
}

// checkNumberExact reports whether the JSON number literal lit survives
// RFC 8785 canonicalisation with its decimal value unchanged.
func checkNumberExact(lit string) error {
	if isSmallInt(lit) {
		return nil // at most 15 digits: exact, and printed as is
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return errNotExact // out of the double range
	}
	canon, err := jcs.NumberToJSON(f)
	if err != nil {
		return errNotExact
	}
	if !sameDecimal(lit, canon) {
		return errNotExact
	}
	return nil
}

// isSmallInt reports whether lit is an integer of at most 15 digits with
// no leading zero (or "0"): a double holds it exactly and ECMAScript
// prints it unchanged.
func isSmallInt[T string | []byte](lit T) bool {
	d := lit
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && (len(d) > 1 || len(lit) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// decimal is a number literal reduced to sign × digits × 10^exp with no
// leading or trailing zeros in digits; zero is digits == "".
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// parseDecimal reduces a JSON (or ECMAScript) number literal. ok is false
// when the exponent is too large to matter (no double has it).
func parseDecimal(s string) (d decimal, ok bool) {
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	}
	mant, expPart := s, ""
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		mant, expPart = s[:k], s[k+1:]
	}
	intPart, frac := mant, ""
	if k := strings.IndexByte(mant, '.'); k >= 0 {
		intPart, frac = mant[:k], mant[k+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return decimal{}, true // zero, whatever the sign and exponent
	}
	var exp int64
	if expPart != "" {
		e, err := strconv.ParseInt(strings.TrimPrefix(expPart, "+"), 10, 32)
		if err != nil {
			return decimal{}, false
		}
		exp = e
	}
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits, d.exp = trimmed, exp
	return d, true
}

// sameDecimal reports whether two number literals denote the same value.
// Negative zero equals zero (RFC 8785 writes -0 as 0).
func sameDecimal(a, b string) bool {
	da, oka := parseDecimal(a)
	db, okb := parseDecimal(b)
	return oka && okb && da == db
}

// Data returns the bytes a record keeps for the JSON text raw: its RFC 8785
// canonical form, or an error (never quoting raw) when raw is not valid
// I-JSON or holds a number its canonical form would change (see
// canonicalData). valid says raw is known to be valid JSON (encoding/json
// produced it), which saves a validation pass. The file record and the
// conformance kit's check of results use it, so both apply one rule.
func Data(raw []byte, valid bool) ([]byte, error) {
	return canonicalDataOf(raw, valid)
}

// IsCanonical reports whether b is JSON text already in its RFC 8785
// canonical form (one pass, no allocation).
func IsCanonical(b []byte) bool { return isCanonicalJSON(b) }
