package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// atLeast is a whole-number flag value that refuses numbers below min,
// so a value out of range is refused as a flag error, like one that is
// no number: a usage error (exit 2) naming the flag and the value
// (boundFlagError, docs/cli.md). what says why min is the least.
type atLeast[T int | int64] struct {
	p    *T
	min  T
	what string
}

// atLeastVar defines flag name on fs as an integer of at least min,
// default def, stored in p.
func atLeastVar[T int | int64](fs *pflag.FlagSet, p *T, name string, def, min T, what, usage string) {
	*p = def
	fs.Var(&atLeast[T]{p: p, min: min, what: what}, name, usage)
}

// String is the value as pflag prints a default: the number in decimal.
func (v *atLeast[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }

// Type is the value's name in help text, as pflag names its integers.
func (v *atLeast[T]) Type() string { return "int" }

// Set parses s as pflag parses an integer; a number below min is refused.
func (v *atLeast[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return err
	}
	if T(n) < v.min {
		return fmt.Errorf("must be at least %d (%s)", v.min, v.what)
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

// Set parses s as time.ParseDuration does; zero or less is refused.
func (v *positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("must be more than 0 (%s)", v.what)
	}
	*v.p = d
	return nil
}
