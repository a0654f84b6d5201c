package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// atLeast is a whole-number flag value that refuses numbers below min or
// beyond what its type holds, so a value out of range is refused as a flag
// error, like one that is no number: a usage error (exit 2) naming the
// flag, the value and the range (boundFlagError, docs/cli.md). what says
// why min is the least, or why max is the most when it is bounded.
type atLeast[T int | int64] struct {
	p        *T
	min, max T
	bounded  bool // max is the most; else what T holds is
	what     string
}

// atLeastVar defines flag name on fs as an integer of at least min,
// default def, stored in p.
func atLeastVar[T int | int64](fs *pflag.FlagSet, p *T, name string, def, min T, what, usage string) {
	*p = def
	fs.Var(&atLeast[T]{p: p, min: min, what: what}, name, usage)
}

// betweenVar defines flag name on fs as an integer from min to max,
// default def, stored in p; what says why those are its bounds.
func betweenVar[T int | int64](fs *pflag.FlagSet, p *T, name string, def, min, max T, what, usage string) {
	*p = def
	fs.Var(&atLeast[T]{p: p, min: min, max: max, bounded: true, what: what}, name, usage)
}

// String is the value as pflag prints a default: the number in decimal.
func (v *atLeast[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }

// Type is the value's name in help text, as pflag names its integers.
func (v *atLeast[T]) Type() string { return "int" }

// Set parses s as pflag parses an integer (decimal, 0x…, 0o…, 0b…). A
// value that is no whole number, is below min or is above max (or beyond
// what T holds) is refused with the same message, which names the range.
func (v *atLeast[T]) Set(s string) error {
	bits := 64
	if _, isInt := any(*v.p).(int); isInt {
		bits = strconv.IntSize
	}
	max := int64(1)<<(bits-1) - 1
	if v.bounded {
		max = int64(v.max)
	}
	n, err := strconv.ParseInt(s, 0, bits)
	if err != nil || n < int64(v.min) || n > max {
		return fmt.Errorf("must be a whole number from %d to %d (%s)", v.min, max, v.what)
	}
	*v.p = T(n)
	return nil
}

// positiveDuration is a duration flag value that refuses a duration that
// is not positive: a usage error (exit 2) naming the flag and the value,
// as atLeast does for numbers; a bound of zero or less would otherwise be
// taken quietly as the default. what says what the duration bounds.
type positiveDuration struct {
	p    *time.Duration
	what string
}

// positiveDurationVar defines flag name on fs as a duration above 0,
// default def, stored in p.
func positiveDurationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, what, usage string) {
	*p = def
	fs.Var(&positiveDuration{p: p, what: what}, name, usage)
}

// String is the value as pflag prints a default (30s).
func (v *positiveDuration) String() string { return v.p.String() }

// Type is the value's name in help text, as pflag names durations.
func (v *positiveDuration) Type() string { return "duration" }

// Set parses s as time.ParseDuration does. A value that is no duration,
// is zero or less or is beyond what a time.Duration holds is refused with
// the same message, which names the range and the form.
func (v *positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("must be a duration above 0 and at most %s, a number with a unit such as 30s or 5m (%s)", time.Duration(math.MaxInt64).Truncate(time.Hour), v.what)
	}
	*v.p = d
	return nil
}
