package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/obversa/obversa/internal/runecut"
)

// boundFlagError is the root's flag error function: pflag's errors name
// the flag or value an operator typed whole ("invalid argument" quotes
// the value, and a number's parse error quotes it again), so each is
// rebuilt from its fields with what was typed cut as echoArg cuts it. The
// error stays the pflag error (errors.As finds it).
func boundFlagError(_ *cobra.Command, err error) error {
	var (
		iv *pflag.InvalidValueError
		ne *pflag.NotExistError
		vr *pflag.ValueRequiredError
		is *pflag.InvalidSyntaxError
	)
	var msg string
	switch {
	case errors.As(err, &iv):
		name := "--" + iv.GetFlag().Name
		msg = fmt.Sprintf("invalid argument %s for %q flag: %s", echoArg(iv.GetValue()), name, valueCause(iv))
	case errors.As(err, &ne):
		if short := ne.GetSpecifiedShortnames(); short != "" {
			msg = fmt.Sprintf("unknown shorthand flag: %q in -%s", []rune(ne.GetSpecifiedName())[0], bound(short))
		} else {
			msg = "unknown flag: --" + bound(ne.GetSpecifiedName())
		}
	case errors.As(err, &vr):
		if short := vr.GetSpecifiedShortnames(); short != "" {
			msg = fmt.Sprintf("flag needs an argument: %q in -%s", []rune(vr.GetSpecifiedName())[0], bound(short))
		} else {
			msg = "flag needs an argument: --" + bound(vr.GetSpecifiedName())
		}
	case errors.As(err, &is):
		msg = "bad flag syntax: " + bound(is.GetSpecifiedFlag())
	default:
		msg = bound(err.Error())
	}
	return &boundedError{msg: msg, err: err}
}

// valueCause says why a flag's value was refused without quoting it: a
// number's parse error names the value, so only its function and reason
// are kept.
func valueCause(iv *pflag.InvalidValueError) string {
	var num *strconv.NumError
	if cause := errors.Unwrap(iv); cause != nil {
		if errors.As(cause, &num) {
			return num.Func + ": " + num.Err.Error()
		}
		text := cause.Error()
		if len(iv.GetValue()) > maxEchoBytes {
			text = strings.ReplaceAll(text, iv.GetValue(), "…")
		}
		return bound(text)
	}
	return "invalid value"
}

// bound is runecut.Bound at the command line's echo bound.
func bound(s string) string { return runecut.Bound(s, maxEchoBytes) }

// boundedError is an error shown as msg that unwraps to err.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

// boundUnknownCommand cuts the command an operator typed in cobra's
// "unknown command %q for %q" (its text; cobra has no type for it) as
// echoArg does, keeping the rest (the suggestions); other errors are
// returned as they are.
func boundUnknownCommand(err error) error {
	const prefix = "unknown command "
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	quoted, qerr := strconv.QuotedPrefix(msg[len(prefix):])
	if qerr != nil {
		return err
	}
	typed, _ := strconv.Unquote(quoted)
	return &boundedError{msg: prefix + echoArg(typed) + msg[len(prefix)+len(quoted):], err: err}
}
