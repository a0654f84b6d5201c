package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/cgroup"
	"github.com/obversa/obversa/plugin/confine"
)

// sideEffectRunFile runs one node whose command, started by cmd-engine
// through sdk/command, marks STARTED, waits for RELEASE and then leaves
// its side effect in SIDE; before that it starts a daemon (double fork,
// setsid, environment emptied: no marker, no parent of the run) that
// waits for RELEASE too and leaves its effect in SIDE. The test holds the effect back until it has
// killed both supervisors and the keeper has answered, so how late a
// loaded machine lets the test act decides nothing.
const sideEffectRunFile = `
teardown_grace = "500ms"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "effect" {
    binding = "shell"
    input   = { command = ["sh", "-c", "(setsid env -i /bin/sh -c 'while [ ! -e RELEASE ]; do sleep 0.05; done; echo daemon >> SIDE' &); echo started >> STARTED; while [ ! -e RELEASE ]; do sleep 0.05; done; echo done >> SIDE"] }
  }
}
`

// TestNothingOutlivesBothSupervisors SIGKILLs the watchdog and the worker
// together while a node's command is in flight: once the keeper has
// recorded its cleanup, `status` says the run was interrupted, its
// cleanup verified and none of its processes alive, and the command,
// released then, never does its side effect. make test tries 50 times,
// 10 at once.
func TestNothingOutlivesBothSupervisors(t *testing.T) {
	t.Parallel()
	tries := 50
	if testing.Short() {
		tries = 10
	}
	killBothSupervisorsTries(t, sideEffectRunFile, tries)
}

// TestNothingOutlivesBothSupervisorsWithMemoryLimit is
// TestNothingOutlivesBothSupervisors for a plugin with a memory limit,
// whose processes are in its memory group: on a host whose memory
// controller is cgroup v2 that is their only group, and the keeper stops
// it by its tag, daemon and all; where the controller is v1 they are in a
// tagged bare v2 group as well (TestMemoryGroupCarriesTheTag checks the
// memory group's name on either). make test tries 10 times.
func TestNothingOutlivesBothSupervisorsWithMemoryLimit(t *testing.T) {
	t.Parallel()
	if sup := confine.Detect(); sup.Cgroup.Memory == cgroup.MemoryNone {
		t.Skipf("no usable memory controller: %s", sup.Cgroup.Reason)
	}
	tries := 10
	if testing.Short() {
		tries = 3
	}
	runFile := strings.Replace(sideEffectRunFile, `path = "BIN/cmd-engine"`, `path = "BIN/cmd-engine"
  confine {
    memory = "256MiB"
  }`, 1)
	killBothSupervisorsTries(t, runFile, tries)
}

// killBothSupervisorsTries makes tries of killBothSupervisors with the run
// file text, 10 at once, and fails t with every try that went wrong.
func killBothSupervisorsTries(t *testing.T, text string, tries int) {
	sem := make(chan struct{}, 10)
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
	)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := killBothSupervisors(t, text, i); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("try %d: %v", i, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d tries failed:\n%s", len(failed), tries, strings.Join(failed, "\n"))
	}
}

// killBothSupervisors is one try of the run file text: it returns what
// went wrong.
func killBothSupervisors(t *testing.T, text string, i int) error {
	runFile := writeRunFile(t, text)
	dir := filepath.Dir(runFile)
	started, side, release := filepath.Join(dir, "STARTED"), filepath.Join(dir, "SIDE"), filepath.Join(dir, "RELEASE")
	b, _ := os.ReadFile(runFile)
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("STARTED"), []byte(started)), []byte("SIDE"), []byte(side))
	b = bytes.ReplaceAll(b, []byte("RELEASE"), []byte(release))
	if err := os.WriteFile(runFile, b, 0o644); err != nil {
		return err
	}
	id := fmt.Sprintf("k%d", i)
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--lock", "--run-id", id, runFile)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Whatever happens, a command left waiting ends with the test.
	defer func() { _ = os.WriteFile(release, nil, 0o644) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the command never started: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	runDir := runDirOf(runFile, id)
	worker, err := readWorkerPID(runDir)
	if err != nil {
		return err
	}
	// Together: stopped first, so that neither acts on the other's death
	// (the worker would stop the run's processes itself), then killed.
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP)
	_ = syscall.Kill(worker, syscall.SIGSTOP)
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(worker, syscall.SIGKILL)
	_ = cmd.Wait()
	// The keeper answers by recording run:cleanup: status is read once it
	// has, not at a fixed moment the keeper may not have reached.
	st, err := keeperAnswered(t, dir, runDir, 60*time.Second)
	if err != nil {
		return err
	}
	if st.Phase != "interrupted" || st.CleanupVerified == nil || !*st.CleanupVerified || len(st.Processes) != 0 {
		kl, _ := os.ReadFile(filepath.Join(runDir, "keeper.log"))
		return fmt.Errorf("status says phase %q, cleanup_verified %v, processes %v; want interrupted, verified, none; keeper.log: %s", st.Phase, st.CleanupVerified, st.Processes, kl)
	}
	// The plugin's cgroups — its memory group on a v1 host too — went
	// with it: the launcher died before it could release them.
	if left := taggedGroupsLeft(runDir); len(left) > 0 {
		return fmt.Errorf("the run's cgroups are left after its keeper answered: %v", left)
	}
	// A command that survived would now do its effect within its 50 ms
	// poll; a second gives it ample room.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if _, err := os.Stat(side); !errors.Is(err, os.ErrNotExist) {
		kl, _ := os.ReadFile(filepath.Join(runDir, "keeper.log"))
		return fmt.Errorf("the command did its side effect after both supervisors died (stat: %v); keeper.log: %s", err, kl)
	}
	return nil
}

// taggedGroupsLeft lists the cgroups tagged for the run at runDir
// (launch.GroupTag of its owner marker) under this process's v2 group and
// its v1 memory group, where the run's worker, this process's
// descendant, made them.
func taggedGroupsLeft(runDir string) []string {
	info, err := cgroup.Self()
	if err != nil {
		return nil
	}
	prefix := confine.TaggedPrefix(launch.GroupTag(watchdog.OwnerMarker(runDir)))
	var left []string
	for _, parent := range []string{info.V2, info.V1Memory} {
		if parent != "" {
			m, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
			left = append(left, m...)
		}
	}
	return left
}

// keeperStatus is what TestNothingOutlivesBothSupervisors reads of status
// --json.
type keeperStatus struct {
	Phase           string `json:"phase"`
	CleanupVerified *bool  `json:"cleanup_verified"`
	Processes       []any  `json:"processes"`
}

// keeperAnswered polls status --json until the run's cleanup is recorded
// (the keeper's answer) and the keeper has let go of the run (while it
// holds the run's lock, status sees a live owner between workers:
// recovering), or d passes, and returns the last status.
func keeperAnswered(t *testing.T, dir, runDir string, d time.Duration) (keeperStatus, error) {
	var st keeperStatus
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		r := obversa(t, dir, "status", "--json", runDir)
		st = keeperStatus{}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			return st, fmt.Errorf("status --json: %v: %s %s", err, r.stdout, r.stderr)
		}
		if st.CleanupVerified != nil && st.Phase != "recovering" {
			return st, nil
		}
		if time.Now().After(deadline) {
			kl, _ := os.ReadFile(filepath.Join(runDir, "keeper.log"))
			return st, fmt.Errorf("no cleanup recorded %s after both supervisors died: status says phase %q, processes %v; keeper.log: %s", d, st.Phase, st.Processes, kl)
		}
	}
}
