package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/jsonconfig"
)

// version is the guard's version, as Describe says it.
const version = "0.1.0"

// defaultWait are the wait patterns of a guard configured without any.
var defaultWait = []string{"git push", "rm -rf", "curl"}

// config is the guard's configuration, the run file's plugin config.
type config struct {
	// Wait lists the patterns a command or prompt waits for a person on;
	// absent = defaultWait, [] = none.
	Wait []string `json:"wait"`
	// DenyBinaries lists programs a binding's command must never run, by
	// name (dd, not /bin/dd).
	DenyBinaries []string `json:"deny_binaries"`
}

// guard is the policy: deny a command that runs a listed program, wait on
// a command or prompt that matches a pattern, allow the rest.
type guard struct {
	mu   sync.RWMutex
	wait []pattern
	deny []string
}

func newGuard() *guard {
	g := &guard{}
	for _, w := range defaultWait {
		g.wait = append(g.wait, newPattern(w))
	}
	return g
}

// Describe implements sdk.Policy.
func (g *guard) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: "guard", Version: version, Types: []sdk.Type{sdk.TypePolicy}}, nil
}

// Configure implements sdk.Policy: it checks the config strictly and
// keeps it when it has no error.
func (g *guard) Configure(_ context.Context, raw json.RawMessage) ([]sdk.Diagnostic, error) {
	c := config{Wait: slices.Clone(defaultWait)}
	if len(raw) > 0 {
		diags, usable := jsonconfig.Decode(raw, &c, "guard config")
		if !usable || jsonconfig.HasErrors(diags) {
			return diags, nil
		}
	}
	var diags []sdk.Diagnostic
	var wait []pattern
	for i, w := range c.Wait {
		if strings.TrimSpace(w) == "" {
			diags = append(diags, sdk.Diagnostic{Severity: sdk.SeverityError, Attribute: fmt.Sprintf("wait[%d]", i),
				Summary: "a wait pattern is empty", Detail: `write the words a command or prompt must hold, for example "git push"`})
			continue
		}
		wait = append(wait, newPattern(w))
	}
	for i, b := range c.DenyBinaries {
		if b == "" || strings.ContainsAny(b, "/ \t") {
			diags = append(diags, sdk.Diagnostic{Severity: sdk.SeverityError, Attribute: fmt.Sprintf("deny_binaries[%d]", i),
				Summary: fmt.Sprintf("%q is not a program name", b), Detail: `name the program as a command runs it, without a directory: "dd", not "/bin/dd"`})
		}
	}
	if jsonconfig.HasErrors(diags) {
		return diags, nil
	}
	g.mu.Lock()
	g.wait, g.deny = wait, slices.Clone(c.DenyBinaries)
	g.mu.Unlock()
	return diags, nil
}

// Decide implements sdk.Policy.
func (g *guard) Decide(_ context.Context, req sdk.DecideRequest) (*sdk.Decision, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if req.Kind == sdk.ActionEngine {
		for _, p := range g.wait {
			if p.matchText(req.Prompt) {
				return wait("the prompt matches %q", p.text), nil
			}
		}
		return &sdk.Decision{Verdict: sdk.VerdictAllow}, nil
	}
	cmds, texts := readInput(req.Input)
	for _, c := range cmds {
		if prog := program(c); slices.Contains(g.deny, prog) {
			return &sdk.Decision{Verdict: sdk.VerdictDeny,
				Reason: fmt.Sprintf("command %q runs %s, which the guard's deny_binaries lists", strings.Join(c, " "), prog)}, nil
		}
	}
	for _, c := range cmds {
		for _, p := range g.wait {
			if p.matchCommand(c) {
				return wait("command %q matches %q", strings.Join(c, " "), p.text), nil
			}
		}
	}
	for _, t := range texts {
		for _, p := range g.wait {
			if p.matchText(t) {
				return wait("the input holds %q", p.text), nil
			}
		}
	}
	return &sdk.Decision{Verdict: sdk.VerdictAllow}, nil
}

func wait(format string, args ...any) *sdk.Decision {
	return &sdk.Decision{Verdict: sdk.VerdictWait, Reason: fmt.Sprintf(format, args...)}
}

// readInput reads a binding's input: the simple commands it runs — its
// "command" list, and the commands of a shell script it passes with -c or
// on stdin — and every other string in it, as text.
func readInput(raw json.RawMessage) (cmds [][]string, texts []string) {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return nil, allStrings(raw)
	}
	argv := stringList(in["command"])
	stdin, _ := in["stdin"].(string)
	if len(argv) > 0 {
		cmds = append(cmds, argv)
		switch s := script(argv); {
		case s != "":
			cmds = append(cmds, commands(s)...)
		case shells[base(argv[0])] && stdin != "":
			cmds = append(cmds, commands(stdin)...)
			stdin = ""
		}
	}
	for k, v := range in {
		if k == "command" || k == "stdin" {
			continue
		}
		b, _ := json.Marshal(v)
		texts = append(texts, allStrings(b)...)
	}
	if stdin != "" {
		texts = append(texts, stdin)
	}
	return cmds, texts
}

// stringList returns v as a list of strings, nil when it is not one.
func stringList(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// allStrings returns every string value inside the JSON raw.
func allStrings(raw []byte) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return []string{string(raw)}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			// A list of words is read as the line they make too.
			if words := stringList(x); len(words) > 1 {
				out = append(out, strings.Join(words, " "))
			}
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
