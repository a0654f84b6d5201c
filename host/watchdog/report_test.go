package watchdog

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
)

// TestReportPipe: the fault a worker writes to its report pipe is what
// the watchdog reads back once the worker's end is closed; a worker that
// wrote nothing reports no fault.
func TestReportPipe(t *testing.T) {
	want := &executor.Fault{Code: runstate.CodeStorageFull, Message: "the run's record could not write /r/events.jsonl", Path: "/r/events.jsonl"}
	for _, f := range []*executor.Fault{want, nil} {
		p, err := newReportPipe()
		if err != nil {
			t.Fatal(err)
		}
		files, env := p.handOn(nil, nil)
		if len(files) != 1 || env[0] != ReportFDEnv+"=3" {
			t.Fatalf("handOn: %v %v", files, env)
		}
		// The worker's end, as the worker holds it: a bare descriptor
		// named by the variable. No *os.File wraps it here: reportFault
		// closes it, and a second owner's finalizer would close the same
		// number again later, whatever file of another test it then is.
		fd, err := syscall.Dup(int(p.w.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		p.started()
		t.Setenv(ReportFDEnv, strconv.Itoa(fd))
		if f != nil {
			reportFault(f)
		} else {
			_ = syscall.Close(fd)
		}
		got := p.fault()
		if diff := cmp.Diff(f, got, cmp.AllowUnexported(executor.Fault{})); diff != "" {
			t.Errorf("fault read back (-want +got):\n%s", diff)
		}
	}
}

// TestReserve: the reserve file takes its room and gives it back once.
func TestReserve(t *testing.T) {
	r := newReserve(t.TempDir())
	if err := r.ensure(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(r.path)
	if err != nil || fi.Size() != reserveBytes {
		t.Fatalf("reserve file: %v, %v; want %d bytes", fi, err, reserveBytes)
	}
	if !r.release() || r.release() {
		t.Error("release should free the room once")
	}
}
