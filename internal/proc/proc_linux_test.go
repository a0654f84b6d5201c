package proc

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Proc
		err  bool
	}{
		{"plain", "42 (sleep) S 1 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 10", Proc{PID: 42, PPID: 1, PGID: 42, StartTime: 12345}, false},
		{"name with spaces and parens", "7 (a (b) c) S 3 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", Proc{PID: 7, PPID: 3, PGID: 9, StartTime: 99}, false},
		{"zombie", "8 (z) Z 1 8 8 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", Proc{}, true},
		{"short", "9 (x) S 1 2", Proc{}, true},
		{"no parens", "garbage", Proc{}, true},
		{"bad start", "9 (x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc 0 0", Proc{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLive([]byte(tt.line))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 1 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 10"))
	f.Add([]byte("1 ()) Z"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		i, err := Parse(b)
		if err != nil {
			return
		}
		// An accepted line holds the pid before the first '(' and names
		// the process between it and the last ')'.
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open]))); err != nil || pid != i.PID {
			t.Fatalf("%q parsed to pid %d", b, i.PID)
		}
		if string(b[open+1:closing]) != i.Name {
			t.Fatalf("%q parsed to name %q", b, i.Name)
		}
	})
}

// TestMarkedAndStop starts a marked child that ignores SIGTERM, finds it
// by its marker, and stops it with SIGKILL after the grace.
func TestMarkedAndStop(t *testing.T) {
	marker := "OBVERSA_TEST_MARK=" + t.Name() + "-" + time.Now().Format("150405.000000")
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	cmd.Env = append(os.Environ(), marker)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal only once the trap is in place.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var ps []Proc
	deadline := time.Now().Add(5 * time.Second)
	for len(ps) == 0 && time.Now().Before(deadline) {
		var err error
		if ps, err = Marked(marker, nil); err != nil {
			t.Fatal(err)
		}
	}
	found := false
	for _, p := range ps {
		found = found || p.PID == cmd.Process.Pid
	}
	if !found {
		t.Fatalf("marked processes %+v lack the child %d", ps, cmd.Process.Pid)
	}
	go func() { _ = cmd.Wait() }()
	start := time.Now()
	if left := Stop(t.Context(), ps, 200*time.Millisecond); len(left) != 0 {
		t.Fatalf("survivors %+v", left)
	}
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("a TERM-ignoring process went in %s, before the grace", el)
	}
}

// TestSignalSkipsReusedPID: a Proc whose start time no longer matches is
// treated as gone and never signalled.
func TestSignalSkipsReusedPID(t *testing.T) {
	self, err := Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	impostor := self
	impostor.StartTime++
	if Alive(impostor) {
		t.Fatal("a pid with another start time counts as alive")
	}
	if err := Signal(impostor, 9); err != nil {
		t.Fatal(err)
	}
	if !Alive(self) {
		t.Fatal("the test process is not alive")
	}
}

// parseLive parses a stat line the way Stat reads one: zombies count as gone.
func parseLive(b []byte) (Proc, error) {
	i, err := Parse(b)
	if err != nil {
		return Proc{}, err
	}
	if !i.Alive() {
		return Proc{}, os.ErrNotExist
	}
	return i.Proc, nil
}
