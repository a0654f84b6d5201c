package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testOwner returns a fresh owner marker, unique to one test.
func testOwner(t *testing.T) string {
	t.Helper()
	return "sha256:" + strings.Repeat("0", 32) + newCommandID()
}

// assertNoOwned fails when a process marked with owner is still alive.
func assertNoOwned(t *testing.T, owner string) {
	t.Helper()
	left, err := InspectOwnerMarked(owner)
	if err != nil {
		t.Fatalf("InspectOwnerMarked: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("processes left behind: %+v", left)
	}
}

func TestRunExit(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("i"), 1<<20)
	tests := []struct {
		name  string
		mode  string
		args  []string
		stdin []byte
		want  Result
	}{
		{"success", "exit", []string{"0"}, nil, Result{ExitCode: 0, Stdout: []byte("out"), Stderr: []byte("err")}},
		{"non-zero exit", "exit", []string{"3"}, nil, Result{ExitCode: 3, Stdout: []byte("out"), Stderr: []byte("err")}},
		{"stdin echoed", "echo", nil, []byte("hello\nworld"), Result{Stdout: []byte("hello\nworld"), Stderr: []byte("done")}},
		{"empty stdin", "echo", nil, nil, Result{Stderr: []byte("done")}},
		{"ignored large stdin", "exit", []string{"0"}, big, Result{Stdout: []byte("out"), Stderr: []byte("err")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv, env := helperArgv(tc.mode, tc.args...)
			got, err := Run(context.Background(), Request{Argv: argv, Env: env, Stdin: tc.stdin, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got.PeakMemoryBytes = 0
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("Result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunSpawnFailed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    Request
		target error
	}{
		{"empty argv", Request{}, nil},
		{"not on PATH", Request{Argv: []string{"obversa-no-such-program-xyz"}}, exec.ErrNotFound},
		{"missing path", Request{Argv: []string{"/nonexistent/obversa/prog"}}, fs.ErrNotExist},
		{"bad directory", Request{Argv: []string{os.Args[0]}, Dir: "/nonexistent/obversa/dir"}, fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), tc.req)
			if !errors.Is(err, ErrSpawnFailed) || Code(err) != CodeSpawnFailed {
				t.Fatalf("Run error = %v, want ErrSpawnFailed", err)
			}
			if tc.target != nil && !errors.Is(err, tc.target) {
				t.Errorf("Run error = %v, want it to match %v", err, tc.target)
			}
			if res != nil {
				t.Errorf("Result = %+v, want nil", res)
			}
		})
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	argv, env := helperArgv("env")
	owner := testOwner(t)
	res, err := Run(context.Background(), Request{
		Argv:       argv,
		Env:        append(env, "EXPLICIT=1", EnvRunID+"=overridden"),
		InheritEnv: []string{"COMMAND_TEST_INHERITED", "COMMAND_TEST_UNSET_NAME"},
		OwnerID:    owner,
		AttemptID:  "attempt-1",
		RunID:      "run-1",
		Timeout:    30 * time.Second,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	if len(got[EnvCommandID]) != 32 {
		t.Errorf("%s = %q, want 32 hex digits", EnvCommandID, got[EnvCommandID])
	}
	delete(got, EnvCommandID)
	want := map[string]string{
		helperEnv:                "env",
		"EXPLICIT":               "1",
		"COMMAND_TEST_INHERITED": "inherited-value",
		EnvRunOwner:              owner,
		EnvAttemptID:             "attempt-1",
		EnvRunID:                 "run-1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("child environment mismatch (-want +got):\n%s", diff)
	}
}

// TestInheritedOwnerWins cannot run in parallel: it changes this process's
// environment.
func TestInheritedOwnerWins(t *testing.T) {
	inherited := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name, env, requested, want string
	}{
		{"valid inherited wins", inherited, "requested", inherited},
		{"invalid inherited ignored", "sha256:short", "requested", "requested"},
		{"upper-case hex is invalid", "sha256:" + strings.Repeat("AB", 32), "requested", "requested"},
		{"none inherited", "", "requested", "requested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvRunOwner, tc.env)
			if got := effectiveOwner(tc.requested); got != tc.want {
				t.Errorf("effectiveOwner(%q) with %q inherited = %q, want %q", tc.requested, tc.env, got, tc.want)
			}
		})
	}
}

func TestRunTimeoutStopsHungCommand(t *testing.T) {
	t.Parallel()
	argv, env := helperArgv("sleep")
	owner := testOwner(t)
	begin := time.Now()
	res, err := Run(context.Background(), Request{Argv: argv, Env: env, OwnerID: owner, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.TimedOut || res.Aborted {
		t.Errorf("TimedOut, Aborted = %v, %v; want true, false", res.TimedOut, res.Aborted)
	}
	if res.Signal != "terminated" || res.ExitCode != -1 {
		t.Errorf("ExitCode, Signal = %d, %q; want -1, terminated", res.ExitCode, res.Signal)
	}
	if el := time.Since(begin); el > 5*time.Second {
		t.Errorf("Run took %v", el)
	}
	assertNoOwned(t, owner)
}

func TestRunContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		ctx         func() (context.Context, context.CancelFunc)
		wantTimeout bool
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, false},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, true},
		{"already cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tc.ctx()
			defer cancel()
			argv, env := helperArgv("ignore-term")
			owner := testOwner(t)
			begin := time.Now()
			res, err := Run(ctx, Request{Argv: argv, Env: env, OwnerID: owner, TeardownGrace: 100 * time.Millisecond})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.TimedOut != tc.wantTimeout || res.Aborted == tc.wantTimeout {
				t.Errorf("TimedOut, Aborted = %v, %v; want %v, %v", res.TimedOut, res.Aborted, tc.wantTimeout, !tc.wantTimeout)
			}
			// The protocol gives a cancelled attempt 3 s to stop (docs/writing-plugins.md).
			if el := time.Since(begin); el > 3*time.Second {
				t.Errorf("Run took %v to stop", el)
			}
			assertNoOwned(t, owner)
		})
	}
}

func TestRunOutputLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"spew", "spew-err"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			argv, env := helperArgv(mode)
			owner := testOwner(t)
			const limit = 64 << 10
			res, err := Run(context.Background(), Request{Argv: argv, Env: env, OwnerID: owner, MaxOutputBytes: limit, Timeout: 30 * time.Second})
			if !errors.Is(err, ErrOutputLimit) || Code(err) != CodeOutputLimit {
				t.Fatalf("Run error = %v, want ErrOutputLimit", err)
			}
			stream := res.Stdout
			if mode == "spew-err" {
				stream = res.Stderr
			}
			if len(stream) != limit {
				t.Errorf("captured %d bytes, want exactly %d", len(stream), limit)
			}
			if res.TimedOut || res.Aborted {
				t.Errorf("TimedOut, Aborted = %v, %v; want false, false", res.TimedOut, res.Aborted)
			}
			assertNoOwned(t, owner)
		})
	}
}

func TestRunMemoryLimit(t *testing.T) {
	t.Parallel()
	argv, env := helperArgv("alloc", "256")
	owner := testOwner(t)
	const limit = 64 << 20
	res, err := Run(context.Background(), Request{Argv: argv, Env: env, OwnerID: owner, MaxMemoryBytes: limit, Timeout: 30 * time.Second})
	if !errors.Is(err, ErrMemoryLimit) || Code(err) != CodeMemoryLimit {
		t.Fatalf("Run error = %v, want ErrMemoryLimit", err)
	}
	if res.PeakMemoryBytes <= limit {
		t.Errorf("PeakMemoryBytes = %d, want above the %d limit", res.PeakMemoryBytes, limit)
	}
	assertNoOwned(t, owner)
}

func TestRunPeakMemoryOfShortCommand(t *testing.T) {
	t.Parallel()
	argv, env := helperArgv("alloc", "48", "exit")
	res, err := Run(context.Background(), Request{Argv: argv, Env: env, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("ExitCode = %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if res.PeakMemoryBytes < 48<<20 {
		t.Errorf("PeakMemoryBytes = %d, want at least 48 MiB", res.PeakMemoryBytes)
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"other", errors.New("x"), ""},
		{"wrapped output", fmt.Errorf("ctx: %w", ErrOutputLimit), CodeOutputLimit},
		{"memory", ErrMemoryLimit, CodeMemoryLimit},
		{"spawn", fmt.Errorf("%w: boom", ErrSpawnFailed), CodeSpawnFailed},
		{"joined limit before teardown", errors.Join(ErrTeardownIncomplete, ErrOutputLimit), CodeOutputLimit},
		{"teardown", ErrTeardownIncomplete, CodeTeardownIncomplete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Code(tc.err); got != tc.want {
				t.Errorf("Code(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestValidOwnerMarker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"sha256:" + strings.Repeat("0f", 32), true},
		{"sha256:" + strings.Repeat("0f", 31), false},
		{"sha256:" + strings.Repeat("0F", 32), false},
		{"sha512:" + strings.Repeat("0f", 32), false},
		{strings.Repeat("0f", 32), false},
		{"sha256:" + strings.Repeat("g", 64), false},
		{"", false},
	}
	for _, tc := range tests {
		if got := ValidOwnerMarker(tc.in); got != tc.want {
			t.Errorf("ValidOwnerMarker(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRunStdoutTee(t *testing.T) {
	t.Parallel()
	argv, env := helperArgv("echo")
	var tee bytes.Buffer
	in := bytes.Repeat([]byte("line\n"), 10000)
	res, err := Run(context.Background(), Request{Argv: argv, Env: env, Stdin: in, StdoutTee: &tee, MaxOutputBytes: 1 << 20, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tee.Bytes(), in) || !bytes.Equal(res.Stdout, in) {
		t.Errorf("tee got %d bytes, stdout %d, want %d", tee.Len(), len(res.Stdout), len(in))
	}
}

// BenchmarkRun measures the fixed cost of an owned command: start, tree
// sampling, the teardown scan after exit, and reaping.
func BenchmarkRun(b *testing.B) {
	argv, env := helperArgv("exit", "0")
	for b.Loop() {
		if _, err := Run(context.Background(), Request{Argv: argv, Env: env}); err != nil {
			b.Fatal(err)
		}
	}
}
