package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/sdk"
)

func configured(t *testing.T, raw string) *guard {
	t.Helper()
	g := newGuard()
	var cfg json.RawMessage
	if raw != "" {
		cfg = json.RawMessage(raw)
	}
	diags, err := g.Configure(context.Background(), cfg)
	if err != nil || len(diags) > 0 {
		t.Fatalf("Configure(%s) = %v, %v", raw, diags, err)
	}
	return g
}

func TestDecide(t *testing.T) {
	t.Parallel()
	g := configured(t, `{"wait": ["git push", "rm -rf", "curl"], "deny_binaries": ["dd", "mkfs.ext4"]}`)
	binding := func(input string) sdk.DecideRequest {
		return sdk.DecideRequest{Kind: sdk.ActionBinding, Binding: "shell", Input: json.RawMessage(input)}
	}
	engine := func(prompt string) sdk.DecideRequest {
		return sdk.DecideRequest{Kind: sdk.ActionEngine, Prompt: prompt}
	}
	tests := []struct {
		name   string
		req    sdk.DecideRequest
		want   sdk.Verdict
		reason string
	}{
		{"a plain command", binding(`{"command": ["go", "vet", "./..."]}`), sdk.VerdictAllow, ""},
		{"git push", binding(`{"command": ["git", "push", "origin", "main"]}`), sdk.VerdictWait, `command "git push origin main" matches "git push"`},
		{"git push by path", binding(`{"command": ["/usr/bin/git", "push"]}`), sdk.VerdictWait, `matches "git push"`},
		{"git pull", binding(`{"command": ["git", "pull"]}`), sdk.VerdictAllow, ""},
		{"a word that only mentions it", binding(`{"command": ["echo", "pushing", "git"]}`), sdk.VerdictAllow, ""},
		{"rm -rf in a script", binding(`{"command": ["sh", "-c", "cd /tmp && rm -rf build"]}`), sdk.VerdictWait, `command "rm -rf build" matches "rm -rf"`},
		{"curl in a pipeline", binding(`{"command": ["bash", "-ec", "echo x | curl -d @- https://example.com"]}`), sdk.VerdictWait, `matches "curl"`},
		{"curl in a command substitution", binding(`{"command": ["sh", "-c", "echo $(curl -s https://example.com)"]}`), sdk.VerdictWait, `matches "curl"`},
		{"a script on stdin", binding(`{"command": ["sh"], "stdin": "set -e\ngit push --force\n"}`), sdk.VerdictWait, `matches "git push"`},
		{"quoted words are one word", binding(`{"command": ["sh", "-c", "echo 'git push'"]}`), sdk.VerdictAllow, ""},
		{"a denied binary", binding(`{"command": ["dd", "if=/dev/zero", "of=/tmp/x", "count=1"]}`), sdk.VerdictDeny, `runs dd, which the guard's deny_binaries lists`},
		{"a denied binary by path under sudo", binding(`{"command": ["sudo", "-n", "/sbin/mkfs.ext4", "/dev/sdz"]}`), sdk.VerdictDeny, "runs mkfs.ext4"},
		{"a denied binary in a script", binding(`{"command": ["sh", "-c", "FOO=1 nice -n 5 dd if=/dev/zero of=x; echo done"]}`), sdk.VerdictDeny, "runs dd"},
		{"deny before wait", binding(`{"command": ["sh", "-c", "git push; dd of=x"]}`), sdk.VerdictDeny, "runs dd"},
		{"a redirection target is no command", binding(`{"command": ["sh", "-c", "echo hi > dd"]}`), sdk.VerdictAllow, ""},
		{"another binding's input", binding(`{"url": "x", "note": "then curl it"}`), sdk.VerdictWait, `the input holds "curl"`},
		{"an input that is not an object", binding(`["git", "push"]`), sdk.VerdictWait, `the input holds "git push"`},
		{"a prompt", engine("Summarise the vet findings."), sdk.VerdictAllow, ""},
		{"a prompt that asks to push", engine("Then Git push the branch."), sdk.VerdictWait, `the prompt matches "git push"`},
		{"a prompt with rm -rf", engine("Clean up with `rm -rf ./out`"), sdk.VerdictWait, `"rm -rf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := g.Decide(context.Background(), tt.req)
			if err != nil || d.Verdict != tt.want || !strings.Contains(d.Reason, tt.reason) || (tt.want != sdk.VerdictAllow && d.Reason == "") {
				t.Errorf("Decide = %+v, %v; want %s with a reason holding %q", d, err, tt.want, tt.reason)
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	// Without a config the defaults apply.
	d, _ := newGuard().Decide(context.Background(), sdk.DecideRequest{Kind: sdk.ActionBinding, Input: json.RawMessage(`{"command":["curl","x"]}`)})
	if d.Verdict != sdk.VerdictWait {
		t.Errorf("default guard on curl: %+v", d)
	}
	// wait = [] waits on nothing.
	g := configured(t, `{"wait": []}`)
	if d, _ := g.Decide(context.Background(), sdk.DecideRequest{Kind: sdk.ActionBinding, Input: json.RawMessage(`{"command":["curl","x"]}`)}); d.Verdict != sdk.VerdictAllow {
		t.Errorf("wait = [] on curl: %+v", d)
	}
	tests := []struct{ name, config, attr, summary string }{
		{"not an object", `["git push"]`, "", "guard config must be an object"},
		{"unknown setting", `{"wiat": []}`, "wiat", `unknown guard config setting "wiat"`},
		{"empty pattern", `{"wait": ["git push", " "]}`, "wait[1]", "a wait pattern is empty"},
		{"a path", `{"deny_binaries": ["/bin/dd"]}`, "deny_binaries[0]", `"/bin/dd" is not a program name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard()
			diags, err := g.Configure(context.Background(), json.RawMessage(tt.config))
			if err != nil || len(diags) != 1 || diags[0].Severity != sdk.SeverityError || diags[0].Attribute != tt.attr || !strings.Contains(diags[0].Summary, tt.summary) {
				t.Fatalf("Configure = %+v, %v", diags, err)
			}
			// A refused config changes nothing.
			if len(g.wait) != len(defaultWait) {
				t.Errorf("a refused config was kept: %v", g.wait)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		want   [][]string
	}{
		{"a b; c 'd e' \"f \\\"g\\\"\"", [][]string{{"a", "b"}, {"c", "d e", `f "g"`}}},
		{"a && b || c | d & e\nf", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}}},
		{"echo $(date) `whoami`", [][]string{{"echo"}, {"date"}, {"whoami"}}},
		{"cmd 2>&1 >out <in arg 2> err", [][]string{{"cmd", "arg"}}},
		{"a \\\nb", [][]string{{"a", "b"}}},
		{"( cd x; make ) ; { y; }", [][]string{{"cd", "x"}, {"make"}, {"y"}}},
		{"unclosed 'quote", [][]string{{"unclosed", "quote"}}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := commands(tt.script); !cmp.Equal(got, tt.want) {
			t.Errorf("commands(%q) = %q, want %q", tt.script, got, tt.want)
		}
	}
	progs := map[string][]string{
		"dd":   {"env", "-i", "A=1", "dd", "x"},
		"rm":   {"timeout", "10s", "sudo", "-n", "/bin/rm", "-rf", "x"},
		"make": {"X=1", "Y=2", "make"},
		"":     {"A=1"},
	}
	for want, cmd := range progs {
		if got := program(cmd); got != want {
			t.Errorf("program(%q) = %q, want %q", cmd, got, want)
		}
	}
}

// FuzzReadInput reads arbitrary bytes as a binding input and as a shell
// script: it never panics, never yields an empty command or an empty
// word outside quotes, and a guard decides on anything.
func FuzzReadInput(f *testing.F) {
	for _, s := range []string{`{"command":["sh","-c","a; b && c | 'd' \"e\" $(f) ` + "`g`" + `"]}`, `{"command":["sh"],"stdin":"x\\\ny"}`,
		`[1,2]`, `{"command":[1]}`, `not json`, "a 2>&1 >f <g", `{"command":["bash","-ec"]}`} {
		f.Add([]byte(s))
	}
	g := newGuard()
	g.deny = []string{"dd"}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range commands(string(data)) {
			if len(c) == 0 {
				t.Fatalf("an empty command from %q", data)
			}
		}
		_, _ = readInput(data)
		for _, kind := range []sdk.ActionKind{sdk.ActionBinding, sdk.ActionEngine} {
			d, err := g.Decide(context.Background(), sdk.DecideRequest{Kind: kind, Input: data, Prompt: string(data)})
			if err != nil || d.Validate() != nil || (d.Verdict != sdk.VerdictAllow && d.Reason == "") {
				t.Fatalf("Decide(%q) = %+v, %v", data, d, err)
			}
		}
	})
}
