package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// helperProc is a running helper with line-oriented stdin and stdout.
type helperProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startHelper(t *testing.T, role string, env ...string) *helperProc {
	t.Helper()
	return startHelperFiles(t, role, nil, env...)
}

// startHelperFiles is startHelper handing files to the helper from
// descriptor 3 on.
func startHelperFiles(t *testing.T, role string, files []*os.File, env ...string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+role), env...)
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		h.in.Close()
		h.cmd.Process.Kill()
		h.cmd.Wait()
	})
	return h
}

func (h *helperProc) line(t *testing.T) string {
	t.Helper()
	s, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper %d: %v (read %q)", h.cmd.Process.Pid, err, s)
	}
	return strings.TrimSpace(s)
}

// TestTwoProcessesSameExpectedRev has two processes append with the same
// expectedRev, round after round: exactly one wins each round, the other
// gets REVISION_CONFLICT — each must see the other's appends (flock, tail
// re-read) before checking.
func TestTwoProcessesSameExpectedRev(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	dir := r.Dir()
	r.Close()
	a := startHelper(t, "race", "STORE_DIR="+dir, "STORE_NAME=a")
	b := startHelper(t, "race", "STORE_DIR="+dir, "STORE_NAME=b")
	if a.line(t) != "ready" || b.line(t) != "ready" {
		t.Fatal("helpers not ready")
	}
	wins := map[string]int{}
	const rounds = 30
	for rev := int64(0); rev < rounds; rev++ {
		fmt.Fprintf(a.in, "%d\n", rev)
		fmt.Fprintf(b.in, "%d\n", rev)
		got := []string{a.line(t), b.line(t)}
		sorted := append([]string(nil), got...)
		sort.Strings(sorted)
		want := []string{"err REVISION_CONFLICT", fmt.Sprintf("ok %d", rev+1)}
		diff(t, fmt.Sprintf("round %d results", rev), want, sorted)
		if got[0] == want[1] {
			wins["a"]++
		} else {
			wins["b"]++
		}
	}
	t.Logf("wins: %v", wins)
	r2, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got := len(readAll(t, r2.events)); got != rounds {
		t.Fatalf("%d events after %d rounds, want one per round", got, rounds)
	}
}
