package command

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var grandchildRE = regexp.MustCompile(`grandchild (\d+)`)

// cancelWhenMade calls cancel once path exists, or returns when ctx ends.
func cancelWhenMade(ctx context.Context, cancel context.CancelFunc, path string) {
	for ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			cancel()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunStopsSetsidGrandchild runs commands that leave a grandchild in a
// new session, ignoring SIGTERM and holding the output pipes, once with the
// cgroup (when this machine allows one) and once with /proc scanning only.
// Not parallel: it switches the package's cgroup use.
func TestRunStopsSetsidGrandchild(t *testing.T) {
	for _, cg := range []bool{true, false} {
		for _, mode := range []string{"orphan", "orphan-wait"} {
			name := mode + "/proc-only"
			if cg {
				name = mode + "/cgroup-if-available"
			}
			t.Run(name, func(t *testing.T) {
				useCgroup = cg
				defer func() { useCgroup = true }()
				argv, env := helperArgv(mode)
				owner := testOwner(t)
				// orphan-wait's command is stopped once it printed its
				// grandchild's pid and waits: not by a timeout, which
				// under load passed while the test binary was still
				// starting the grandchild, before the pid was printed.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if mode == "orphan-wait" {
					waiting := filepath.Join(t.TempDir(), "waiting")
					env = append(env, waitingFileEnv+"="+waiting)
					go cancelWhenMade(ctx, cancel, waiting)
				}
				begin := time.Now()
				res, err := Run(ctx, Request{
					Argv: argv, Env: env, OwnerID: owner,
					TeardownGrace: 200 * time.Millisecond,
				})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				m := grandchildRE.FindSubmatch(res.Stdout)
				if m == nil {
					t.Fatalf("no grandchild pid in stdout %q, stderr %q", res.Stdout, res.Stderr)
				}
				if res.Aborted != (mode == "orphan-wait") || res.TimedOut {
					t.Errorf("Aborted, TimedOut = %v, %v; want %v, false", res.Aborted, res.TimedOut, mode == "orphan-wait")
				}
				// Not a measure: a Run that waited for the grandchild,
				// which holds the pipes and sleeps an hour, would take
				// that hour.
				if el := time.Since(begin); el > time.Minute {
					t.Errorf("Run took %v", el)
				}
				// The grandchild's own output, written before teardown,
				// is kept in full.
				if !strings.HasPrefix(string(res.Stdout), "ready\n") || res.OutputCut != "" {
					t.Errorf("stdout %q, cut %q: want the grandchild's \"ready\" first, nothing cut", res.Stdout, res.OutputCut)
				}
				pid, _ := strconv.Atoi(string(m[1]))
				if s, err := readStat(pid); err == nil && s.alive() && environHas(pid, EnvRunOwner+"="+owner) {
					t.Errorf("grandchild %d still alive: %+v", pid, s)
				}
				assertNoOwned(t, owner)
			})
		}
	}
}

func TestStopOwnedTree(t *testing.T) {
	t.Parallel()
	owner := testOwner(t)
	var cmds []*exec.Cmd
	for _, mode := range []string{"sleep", "ignore-term"} {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), helperEnv+"="+mode, EnvRunOwner+"="+owner)
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if mode == "ignore-term" {
			// Wait for "ready": SIGTERM is ignored from then on.
			if _, err := out.Read(make([]byte, 6)); err != nil {
				t.Fatal(err)
			}
		}
		cmds = append(cmds, c)
	}
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	found, err := InspectOwnerMarked(owner)
	if err != nil {
		t.Fatal(err)
	}
	var gotPIDs []int
	for _, p := range found {
		gotPIDs = append(gotPIDs, p.PID)
	}
	wantPIDs := []int{cmds[0].Process.Pid, cmds[1].Process.Pid}
	if wantPIDs[0] > wantPIDs[1] {
		wantPIDs[0], wantPIDs[1] = wantPIDs[1], wantPIDs[0]
	}
	if diff := cmp.Diff(wantPIDs, gotPIDs); diff != "" {
		t.Fatalf("InspectOwnerMarked pids (-want +got):\n%s", diff)
	}
	remaining, err := StopOwnedTree(context.Background(), owner, 200*time.Millisecond)
	if err != nil || len(remaining) > 0 {
		t.Fatalf("StopOwnedTree = %+v, %v", remaining, err)
	}
	for _, c := range cmds {
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("pid %d: Wait = %v, want a signal exit", c.Process.Pid, err)
		}
	}
	cmds = nil
	assertNoOwned(t, owner)
}

func TestOwnerScanRejectsEmptyOwner(t *testing.T) {
	t.Parallel()
	if _, err := InspectOwnerMarked(""); err == nil {
		t.Error("InspectOwnerMarked(\"\") succeeded")
	}
	if _, err := StopOwnedTree(context.Background(), "", 0); err == nil {
		t.Error("StopOwnedTree(\"\") succeeded")
	}
}

// TestSignalChecksStartTime shows a process is never signalled under a
// start time that is not its own.
func TestSignalChecksStartTime(t *testing.T) {
	t.Parallel()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"=sleep")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	s, err := readStat(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := signalProcess(s.pid, s.start+1, unix.SIGKILL); !errors.Is(err, errGone) {
		t.Fatalf("signal with wrong start time = %v, want errGone", err)
	}
	time.Sleep(50 * time.Millisecond)
	if s2, err := readStat(s.pid); err != nil || !s2.alive() {
		t.Fatalf("process was signalled: %+v, %v", s2, err)
	}
	if err := signalProcess(s.pid, s.start, unix.SIGKILL); err != nil {
		t.Fatalf("signal with right start time: %v", err)
	}
	var ee *exec.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Errorf("Wait = %v, want killed", err)
	}
}

func TestCleanupCapability(t *testing.T) {
	t.Parallel()
	c := CleanupCapability()
	if c.Platform != "linux" || !c.ProcessGroup || !c.ProcScan || c.Memory != "rss-sampling" {
		t.Errorf("CleanupCapability() = %+v", c)
	}
	if len(c.NotGuaranteed) == 0 {
		t.Error("NotGuaranteed is empty; sampling limits must be stated")
	}
	t.Logf("capability: %+v", c)
}

// TestRunReportsSurvivors simulates a process that no signal stops (as one
// in uninterruptible sleep would be) and checks it is reported. Not
// parallel: it replaces the package's signal function.
func TestRunReportsSurvivors(t *testing.T) {
	argv, env := helperArgv("sleep")
	var victim struct {
		pid   int
		start uint64
	}
	sendSignal = func(pid int, start uint64, sig unix.Signal) error {
		victim.pid, victim.start = pid, start
		return nil // dropped
	}
	killVerify = 200 * time.Millisecond
	defer func() { sendSignal, killVerify = signalProcess, KillVerifyTimeout }()
	useCgroup = false // cgroup.kill would stop it anyway
	defer func() { useCgroup = true }()

	res, err := Run(context.Background(), Request{Argv: argv, Env: env, Timeout: 100 * time.Millisecond, TeardownGrace: 50 * time.Millisecond})
	defer func() { _ = signalProcess(victim.pid, victim.start, unix.SIGKILL) }()
	if !errors.Is(err, ErrTeardownIncomplete) || Code(err) != CodeTeardownIncomplete {
		t.Fatalf("Run error = %v, want ErrTeardownIncomplete", err)
	}
	if !res.TimedOut || len(res.RemainingProcesses) != 1 || res.RemainingProcesses[0].PID != victim.pid {
		t.Errorf("Result = %+v, want timed out with pid %d remaining", res, victim.pid)
	}
}
