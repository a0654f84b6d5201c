// Command preflight runs the preflight example end to end with the built
// CLI: a one-node graph whose engine is not ready pauses PREFLIGHT_PAUSED
// before anything is dispatched; the example then marks the engine ready
// and resumes the run with the pause's event id, and the run completes.
// It prints a JSON report and removes its temporary directory.
//
// Usage, from the repository root after `make build`:
//
//	go run ./examples/preflight [-bin DIR]
//
// DIR holds obversa and mock-engine (default "bin"). The exit status is 0
// when every step went as described, 1 otherwise.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed run.hcl
var runHCL string

// runID names the example's run in its storage directory.
const runID = "preflight-example"

// wantCalls is the mock engine's calls log of a correct run: the first
// round's static check and live call (not ready), then the resumed
// round's, then the node's ordinary call.
var wantCalls = []string{"static", "live:not-ready", "static", "live:ready", "ordinary"}

// Result is a run result as `obversa run --json` prints it.
type Result struct {
	Kind   string          `json:"kind"`
	Code   string          `json:"code,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Exit   int             `json:"exit"`
}

// Report is what the example prints.
type Report struct {
	// Dir is the temporary directory the example worked in; it is gone
	// when the report is printed.
	Dir string `json:"dir"`
	// Paused is the first run's result: a PREFLIGHT_PAUSED pause.
	Paused Result `json:"paused"`
	// PreflightEventID is the pause's event id, from Paused.
	PreflightEventID string `json:"preflight_event_id"`
	// DispatchedBeforeResume counts graph:node-dispatched events in the
	// record while paused: 0.
	DispatchedBeforeResume int `json:"dispatched_before_resume"`
	// Resumed is the result of `obversa resume --preflight ID`.
	Resumed Result `json:"resumed"`
	// Calls is the mock engine's calls log.
	Calls []string `json:"calls"`
	// OK reports that every step went as described.
	OK bool `json:"ok"`
}

func main() {
	bin := flag.String("bin", "bin", "directory holding the obversa and mock-engine binaries")
	flag.Parse()
	rep, err := Run(*bin, os.Stderr)
	if rep != nil {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(b))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "preflight example:", err)
		os.Exit(1)
	}
	if !rep.OK {
		os.Exit(1)
	}
}

// Run runs the example with the binaries in binDir, logging the CLI's
// stderr to log. It returns an error when a step could not be carried out
// (a missing binary, an unreadable record); a step with an unexpected
// outcome is reported with OK false. The temporary directory is removed
// before Run returns.
func Run(binDir string, log io.Writer) (rep *Report, err error) {
	bin, err := filepath.Abs(binDir)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"obversa", "mock-engine"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("%w (build the binaries with `make build`, or pass -bin)", err)
		}
	}
	dir, err := os.MkdirTemp("", "obversa-preflight-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = rmErr
		}
	}()
	rep = &Report{Dir: dir, Calls: []string{}}
	cli := &cli{exe: filepath.Join(bin, "obversa"), dir: dir, log: log}

	// The run file with the plugin and the mock's files in this directory.
	text := strings.NewReplacer(`"../../bin/`, `"`+bin+`/`,
		`"calls.log"`, `"`+filepath.Join(dir, "calls.log")+`"`,
		`"ready.txt"`, `"`+filepath.Join(dir, "ready.txt")+`"`).Replace(runHCL)
	runFile := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		return rep, err
	}
	if err := setReady(dir, false); err != nil {
		return rep, err
	}
	if _, code, err := cli.run("plugin", "lock", runFile); err != nil || code != 0 {
		return rep, fmt.Errorf("obversa plugin lock: exit %d: %v", code, err)
	}

	// 1. The engine is not ready: the run pauses before dispatch.
	if rep.Paused, err = cli.result("run", "--json", "--run-id", runID, runFile); err != nil {
		return rep, err
	}
	var out struct {
		ID string `json:"preflight_event_id"`
	}
	_ = json.Unmarshal(rep.Paused.Output, &out)
	rep.PreflightEventID = out.ID
	runDir := filepath.Join(dir, ".obversa", "default", "runs", runID)
	if rep.DispatchedBeforeResume, err = cli.count(runDir, "graph:node-dispatched"); err != nil {
		return rep, err
	}

	// 2. Ready now: resume with the pause's event id.
	if err := setReady(dir, true); err != nil {
		return rep, err
	}
	if rep.Resumed, err = cli.result("resume", "--json", "--preflight", rep.PreflightEventID, runDir); err != nil {
		return rep, err
	}
	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	if err != nil {
		return rep, err
	}
	rep.Calls = append(rep.Calls, strings.Fields(string(calls))...)

	rep.OK = rep.Paused.Exit == 3 && rep.Paused.Kind == "paused" && rep.Paused.Code == "PREFLIGHT_PAUSED" &&
		rep.PreflightEventID != "" && rep.DispatchedBeforeResume == 0 &&
		rep.Resumed.Exit == 0 && rep.Resumed.Kind == "complete" && slices.Equal(rep.Calls, wantCalls)
	return rep, nil
}

// setReady writes the mock engine's ready file.
func setReady(dir string, ready bool) error {
	content := "not ready\n"
	if ready {
		content = "ready\n"
	}
	return os.WriteFile(filepath.Join(dir, "ready.txt"), []byte(content), 0o644)
}

// cli runs the obversa binary in the example's directory.
type cli struct {
	exe, dir string
	log      io.Writer
}

// run returns the command's stdout and exit status; err is set only when
// it could not be started.
func (c *cli) run(args ...string) ([]byte, int, error) {
	cmd := exec.Command(c.exe, args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, c.log
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), ee.ExitCode(), nil
	}
	return out.Bytes(), 0, err
}

// result runs a command that prints a result object with --json.
func (c *cli) result(args ...string) (Result, error) {
	out, code, err := c.run(args...)
	if err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return Result{Exit: code}, fmt.Errorf("obversa %s printed %q (exit %d): %w", args[0], out, code, err)
	}
	r.Exit = code
	return r, nil
}

// count returns how many events of type typ the run's record holds.
func (c *cli) count(runDir, typ string) (int, error) {
	out, code, err := c.run("events", "--json", runDir)
	if err != nil || code != 0 {
		return 0, fmt.Errorf("obversa events: exit %d: %v", code, err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return 0, fmt.Errorf("event line %q: %w", sc.Text(), err)
		}
		if e.Type == typ {
			n++
		}
	}
	return n, sc.Err()
}
