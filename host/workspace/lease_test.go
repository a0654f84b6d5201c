package workspace

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeaseSameProcess(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first, err := AcquireLease(root, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".obversa", "workspace.lease"); first.Path() != want {
		t.Errorf("Path = %q, want %q", first.Path(), want)
	}

	// A second Lease in the same process is another open file description:
	// refused, naming the first holder.
	_, err = AcquireLease(root, "run-2")
	var le *LeaseError
	if !errors.As(err, &le) || !errors.Is(err, ErrLeaseHeld) || Code(err) != "WORKSPACE_LEASE" {
		t.Fatalf("second AcquireLease = %v, want a *LeaseError", err)
	}
	if le.Holder != "run-1" || le.PID != os.Getpid() || le.Path != first.Path() || le.Since.IsZero() {
		t.Errorf("LeaseError = %+v, want holder run-1, pid %d", le, os.Getpid())
	}
	if !strings.Contains(err.Error(), `"run-1"`) {
		t.Errorf("message %q does not name the holder", err)
	}

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Errorf("second Release = %v, want nil", err)
	}
	second, err := AcquireLease(root, "run-2")
	if err != nil {
		t.Fatalf("AcquireLease after Release: %v", err)
	}
	defer second.Release()
	rec, found, err := ReadLease(root)
	if err != nil || !found || rec.Holder != "run-2" || rec.PID != os.Getpid() {
		t.Errorf("ReadLease = %+v, %v, %v; want holder run-2", rec, found, err)
	}
}

func TestLeaseAcrossProcesses(t *testing.T) {
	t.Parallel()
	t.Run("another process holds it", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		helper := helperCommand(t, "hold", root, "run-other")
		stdin, err := helper.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
			t.Fatalf("helper said %q, %v", line, err)
		}

		_, err = AcquireLease(root, "run-me")
		var le *LeaseError
		if !errors.As(err, &le) {
			t.Fatalf("AcquireLease while the helper holds it = %v, want a *LeaseError", err)
		}
		if le.Holder != "run-other" || le.PID != helper.Process.Pid {
			t.Errorf("LeaseError names %q pid %d, want run-other pid %d", le.Holder, le.PID, helper.Process.Pid)
		}

		stdin.Close() // the helper releases and exits
		if err := helper.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
		l, err := AcquireLease(root, "run-me")
		if err != nil {
			t.Fatalf("AcquireLease after the helper released: %v", err)
		}
		l.Release()
	})

	t.Run("this process holds it", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		l, err := AcquireLease(root, "run-me")
		if err != nil {
			t.Fatal(err)
		}
		want := helperResult{Code: "WORKSPACE_LEASE", Holder: "run-me", PID: os.Getpid()}
		if diff := cmp.Diff(want, tryInHelper(t, root)); diff != "" {
			t.Errorf("helper while held (-want +got):\n%s", diff)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(helperResult{}, tryInHelper(t, root)); diff != "" {
			t.Errorf("helper after Release (-want +got):\n%s", diff)
		}
	})

	t.Run("holder killed", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		helper := helperCommand(t, "hold", root, "run-doomed")
		stdin, err := helper.StdinPipe() // kept open: only the kill ends the helper
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		stdout, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
			t.Fatalf("helper said %q, %v", line, err)
		}
		if _, err := AcquireLease(root, "run-me"); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("AcquireLease while held = %v, want ErrLeaseHeld", err)
		}
		helper.Process.Kill()
		helper.Wait()
		// The kernel dropped the lock with the process: no stale lease.
		l, err := AcquireLease(root, "run-me")
		if err != nil {
			t.Fatalf("AcquireLease after the holder died: %v", err)
		}
		l.Release()
	})
}

// tryInHelper runs a "try" helper against root and returns what it saw.
func tryInHelper(t *testing.T, root string) helperResult {
	t.Helper()
	out, err := helperCommand(t, "try", root, "run-helper").Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var r helperResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return r
}

func TestAcquireLeaseErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]file{"file": {Content: "f"}, "blocked/.obversa": {Content: "a file where the directory goes"}})
	tests := []struct {
		name, root, holder, contains string
	}{
		{"empty holder", dir, "", "holder is empty"},
		{"missing root", filepath.Join(dir, "missing"), "run-1", "no such file"},
		{"root is a file", filepath.Join(dir, "file"), "run-1", "not a directory"},
		{".obversa is a file", filepath.Join(dir, "blocked"), "run-1", "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := AcquireLease(tt.root, tt.holder)
			if err == nil {
				l.Release()
				t.Fatal("AcquireLease succeeded, want an error")
			}
			if errors.Is(err, ErrLeaseHeld) || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("AcquireLease = %v, want an error containing %q", err, tt.contains)
			}
		})
	}
}

func TestReadLeaseWithoutFile(t *testing.T) {
	t.Parallel()
	rec, found, err := ReadLease(t.TempDir())
	if err != nil || found || rec != (LeaseRecord{}) {
		t.Errorf("ReadLease = %+v, %v, %v; want nothing", rec, found, err)
	}
}
