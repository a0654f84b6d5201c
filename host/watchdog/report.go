package watchdog

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/obversa/obversa/host/executor"
)

// ReportFDEnv tells a worker which inherited descriptor is its end of the
// report pipe: where it writes, as it exits, the fault that stopped it
// (executor.Fault as JSON), for its watchdog to record once it is gone.
// A full device cannot take the worker's own record of it, nor its log.
const ReportFDEnv = "OBVERSA_REPORT_FD"

// maxReport bounds what the watchdog reads from a worker's report pipe.
const maxReport = 256 << 10

// reportPipe is the watchdog's side of one worker's report pipe.
type reportPipe struct {
	r, w *os.File
	got  chan []byte
}

func newReportPipe() (*reportPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &reportPipe{r: r, w: w, got: make(chan []byte, 1)}, nil
}

// handOn adds the pipe's write end to what the worker inherits.
func (p *reportPipe) handOn(files []*os.File, env []string) ([]*os.File, []string) {
	return append(files, p.w), append(env, ReportFDEnv+"="+strconv.Itoa(3+len(files)))
}

// started lets go of the watchdog's copy of the write end once the worker
// holds its own, and reads the report until the worker's end closes.
func (p *reportPipe) started() {
	p.w.Close()
	go func() {
		b, _ := io.ReadAll(io.LimitReader(p.r, maxReport))
		p.got <- b
	}()
}

// close releases the pipe (a worker that never started).
func (p *reportPipe) close() {
	p.w.Close()
	p.r.Close()
}

// fault returns the fault the exited worker reported, nil for none. A
// process that kept the write end open (nothing of the run should) is
// waited for only briefly.
func (p *reportPipe) fault() *executor.Fault {
	defer p.r.Close()
	var b []byte
	select {
	case b = <-p.got:
	case <-time.After(time.Second):
		return nil
	}
	if len(b) == 0 {
		return nil
	}
	var f executor.Fault
	if err := json.Unmarshal(b, &f); err != nil || f.Code == "" {
		return nil
	}
	return &f
}

// holdReportPipe keeps the worker's end of the report pipe from every
// process it starts.
func holdReportPipe() {
	if fd, err := strconv.Atoi(os.Getenv(ReportFDEnv)); err == nil && fd > 2 {
		syscall.CloseOnExec(fd)
	}
}

// reportFault writes the fault err stands for (executor.ReportOf), if any,
// to the report pipe; a worker started without one (the crash simulation)
// reports nothing.
func reportFault(err error) {
	f := executor.ReportOf(err)
	fd, perr := strconv.Atoi(os.Getenv(ReportFDEnv))
	if f == nil || perr != nil || fd <= 2 {
		return
	}
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	w := os.NewFile(uintptr(fd), "report")
	_, _ = w.Write(b)
	_ = w.Close()
}
