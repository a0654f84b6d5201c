package proc

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestCPUCountsThisProcess(t *testing.T) {
	// The schedstat window [pid0, pid1] encloses the getrusage window
	// [self0, self1]: reading /proc costs CPU, which getrusage would count
	// and schedstat not if pid0 were read after self0.
	pid0, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	// Spin until getrusage says 30 ms of CPU went by (however loaded the
	// machine); the threads' schedstat must have seen them too.
	const want = 30 * time.Millisecond
	for deadline := time.Now().Add(time.Minute); ; {
		self, err := SelfCPU()
		if err != nil {
			t.Fatal(err)
		}
		if self-self0 >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SelfCPU grew by %v in a minute of spinning", self-self0)
		}
	}
	pid1, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := pid1 - pid0; d < want-time.Millisecond {
		t.Fatalf("CPU(own pid) grew by %v while SelfCPU grew by %v or more", d, want)
	}
}

func TestCPUOfAnExitedProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := CPU(cmd.Process.Pid); !errors.Is(err, ErrGone) {
		t.Fatalf("CPU of reaped process %d: %v, want ErrGone", cmd.Process.Pid, err)
	}
}
