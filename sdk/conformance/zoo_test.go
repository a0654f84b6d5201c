package conformance_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/sdk/conformance"
)

// Exit codes of `obversa run` (docs/cli.md).
const (
	exitComplete = 0
	exitFailed   = 1
	exitPaused   = 3
	exitUsage    = 2
)

// zooRun is what `obversa run` must make of a zoo plugin: its exit code,
// and cause in its stderr, or, when inLog, in the run's plugin log.
type zooRun struct {
	exit  int
	cause string
	inLog bool
	// node is added to the node block, plugin to the plugin block.
	node, plugin string
}

// TestZoo checks each broken plugin of the zoo: the kit fails it at exactly
// the case it breaks, with the cause in one line, and `obversa run`
// refuses or handles it with the same cause (docs/writing-plugins.md,
// "The broken-plugin zoo").
func TestZoo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode string
		// kase is the case the kit fails; cause is in its one-line
		// report.
		kase, cause string
		// also are further cases the kit fails for the same fault,
		// shown through another RPC.
		also []string
		// handshake is the kit's handshake timeout; 0 = the default.
		handshake time.Duration
		// run is what `obversa run` does; nil = not run.
		run *zooRun
	}{
		{mode: "stdout-noise", kase: "handshake.line", cause: noiseLine,
			run: &zooRun{exit: exitUsage, cause: `printed to stdout before its handshake: "` + noiseLine + `"`}},
		{mode: "long-line", kase: "handshake.line", cause: "wrote a line of 102400 bytes on stdout before its handshake",
			run: &zooRun{exit: exitUsage, cause: "wrote a line of 102400 bytes on stdout before its handshake"}},
		{mode: "slow-handshake", kase: "handshake.line", cause: "did not print its handshake within 2s", handshake: 2 * time.Second,
			run: &zooRun{exit: exitUsage, cause: "did not complete its handshake within 2s", plugin: `start_timeout = "2s"`}},
		{mode: "wrong-version", kase: "handshake.line", cause: "protocol version 2",
			run: &zooRun{exit: exitUsage, cause: "answered protocol version 2 in its handshake"}},
		{mode: "exit-at-start", kase: "handshake.line", cause: exitMessage,
			run: &zooRun{exit: exitUsage, cause: exitMessage}},
		{mode: "not-serving", kase: "health", cause: "NOT_SERVING",
			run: &zooRun{exit: exitUsage, cause: "health is NOT_SERVING"}},
		{mode: "stdout-after", kase: "handshake.stdout", cause: "wrote to stdout after its handshake: \"" + strayStdoutLine,
			run: &zooRun{exit: exitComplete, cause: strayStdoutLine, inLog: true}},
		{mode: "stderr-flood", kase: "handshake.line", cause: floodMessage,
			run: &zooRun{exit: exitUsage, cause: floodMessage}},
		{mode: "grandchild", kase: "handshake.line", cause: grandchildMessage,
			run: &zooRun{exit: exitUsage, cause: grandchildMessage}},
		{mode: "ignores-cancel", kase: "run.cancel", also: []string{"run.attempts"}, cause: "the plugin's Run handler had not returned 3",
			// The node is not retry_safe, so the attempt the host cut off
			// at its timeout waits for the operator to reconcile it.
			run: &zooRun{exit: exitPaused, cause: "paused at dag/a/1 (reconcile-attempt): timed out after 1s; its effect may have happened", node: `timeout = "1s"`}},
		{mode: "result-first", kase: "run.parts", cause: "after the terminal one", also: []string{"run.attempts"},
			run: &zooRun{exit: exitComplete, cause: resultFirstText}},
		{mode: "zero-usage", kase: "run.usage", cause: "unknown-usage scenario reported {input 0 output 0 cache_read 0 cache_creation 0} instead of unknown"},
		{mode: "two-finals", kase: "run.parts", also: []string{"run.attempts"}, cause: "2 final parts, want exactly 1",
			run: &zooRun{exit: exitFailed, cause: "result has 2 final parts, want exactly 1"}},
		{mode: "never-exits", kase: "robust.shutdown", cause: "still running 2 s after go-plugin's controller Shutdown",
			run: &zooRun{exit: exitComplete, cause: "plugin failed to exit gracefully", inLog: true}},
	}
	bin := self(t)
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			env := helperEnv(tt.mode)
			mark := zooMarkEnv + "=" + filepath.Base(filepath.Dir(t.TempDir()))
			env[zooMarkEnv] = strings.TrimPrefix(mark, zooMarkEnv+"=")
			rep, err := conformance.Check(ctx, bin, conformance.Options{Env: env, HandshakeTimeout: tt.handshake})
			if err != nil {
				t.Fatal(err)
			}
			// The kit stops what each of its launches started, even a
			// daemon that left the plugin's process group and session and
			// emptied its environment (the grandchild).
			if left := leftRunning(mark, 3*time.Second); len(left) > 0 {
				t.Errorf("processes the plugin started outlive the kit: pids %v", left)
			}
			want := append([]string{tt.kase}, tt.also...)
			slices.Sort(want)
			if diff := cmp.Diff(want, statuses(rep, conformance.Fail)); diff != "" {
				for _, r := range rep.Results {
					if r.Status == conformance.Fail {
						t.Logf("%s: %s", r.Case, r.Seen)
					}
				}
				t.Errorf("failed cases (-want +got):\n%s", diff)
			}
			r, _ := rep.Result(tt.kase)
			if !strings.Contains(r.Seen, tt.cause) || strings.Contains(r.Seen, "\n") {
				t.Errorf("%s: %q, want one line with %q", tt.kase, r.Seen, tt.cause)
			}
			if tt.run != nil {
				checkZooRun(t, tt.mode, *tt.run)
			}
		})
	}
}

// zooRunFile runs one node on the zoo plugin {mode}.
const zooRunFile = `
plugin "mock" {
  type = "engine"
  path = "SELF"
  env  = { ` + modeEnv + ` = "{mode}", GORACE = "atexit_sleep_ms=0" }
  {plugin}
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hello"
    {node}
  }
}
`

// checkZooRun runs the zoo plugin mode under `obversa run` and checks
// its exit code and where it names the cause.
func checkZooRun(t *testing.T, mode string, want zooRun) {
	t.Helper()
	dir := t.TempDir()
	runFile := filepath.Join(dir, "run.hcl")
	text := strings.NewReplacer("SELF", self(t), "{mode}", mode, "{node}", want.node, "{plugin}", want.plugin).Replace(zooRunFile)
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := exampletest.Obversa(t, filepath.Join(binDir, "obversa"), dir, "run", "--lock", runFile)
	if code != want.exit {
		t.Errorf("obversa run: exit %d, want %d; stderr:\n%s", code, want.exit, stderr)
	}
	where, text := "stderr", stderr+stdout
	if want.inLog {
		where, text = "the run's plugin log", pluginLogs(t, dir)
	}
	if !strings.Contains(text, want.cause) {
		t.Errorf("obversa run: %s lacks %q:\n%.3000s", where, want.cause, text)
	}
}

// pluginLogs returns the plugin logs under dir's .obversa, joined.
func pluginLogs(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(filepath.Join(dir, ".obversa"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "plugins.log") {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
