package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/obversa/obversa/plugin"
)

// A raw launch starts the plugin the way go-plugin does (the same
// environment and handshake variables) but reads its stdout itself, so that
// the handshake cases can see exactly what the plugin prints and when it
// exits.

// maxHandshakeLine bounds the first line read from a plugin's stdout.
const maxHandshakeLine = 64 << 10

// maxCapture bounds the stderr kept from a raw launch: its last bytes,
// where a plugin that gives up says why.
const maxCapture = 16 << 10

// rawProcess is a plugin started by rawStart.
type rawProcess struct {
	cmd *exec.Cmd
	// tree holds what the process starts; stop ends it.
	tree   *plugin.ProcessTree
	stdout *bufio.Reader
	stderr *tailBuffer
	// gotLine is closed once the first stdout line (or the end of stdout)
	// has been read into line and lineErr.
	gotLine chan struct{}
	line    string
	lineErr error
	exited  chan struct{}
	err     error // from Wait, valid once exited is closed
}

// rawStart starts bin with env plus the handshake variables from
// plugin.HandshakeEnv (replaced by handshake when not nil), on the calling
// thread, contained as plugin.Launch contains a plugin
// (plugin.ProcessTree: the host's parent-death signal, a process group, a
// launch marker and, with group, a cgroup of its own). The caller must
// call stop.
func rawStart(bin string, args, env, handshake []string, group bool) (*rawProcess, error) {
	for i := 0; ; i++ {
		p, err := rawStartOnce(bin, args, env, handshake, group)
		// The kit's private copy of the binary was written moments ago: a
		// child another goroutine forked meanwhile may still hold it open
		// for writing until it execs (golang.org/issue/22315).
		if !errors.Is(err, syscall.ETXTBSY) || i == 20 {
			return p, err
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
}

func rawStartOnce(bin string, args, env, handshake []string, group bool) (*rawProcess, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append([]string{}, env...), handshake...)
	tree := plugin.NewProcessTree(bin, group)
	tree.Prepare(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = tree.Stop()
		return nil, err
	}
	p := &rawProcess{cmd: cmd, tree: tree, stderr: &tailBuffer{max: maxCapture}, gotLine: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// A child of the plugin may hold its output pipes open after the
	// plugin itself is gone: do not wait on them past a moment.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		_ = tree.Stop()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	tree.Started(cmd.Process.Pid)
	p.stdout = bufio.NewReaderSize(out, maxHandshakeLine)
	go func() {
		line, err := p.stdout.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			n := len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				var more []byte
				more, err = p.stdout.ReadSlice('\n')
				n += len(more)
			}
			if err == nil {
				n-- // the newline
			}
			err = fmt.Errorf("wrote a line of %d bytes on stdout before its handshake (the handshake line comes first and is at most %d bytes; logs belong on stderr)", n, maxHandshakeLine)
			line = line[:0]
		}
		p.line, p.lineErr = string(bytes.TrimRight(line, "\r\n")), err
		close(p.gotLine)
		// Keep draining so that the plugin never blocks on stdout.
		_, _ = io.Copy(io.Discard, p.stdout)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// firstLine waits up to d for the first stdout line. It returns the line
// (possibly partial, without its newline) and io.EOF when stdout closed
// first, or an error when d passed. It may be called again.
func (p *rawProcess) firstLine(d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.gotLine:
		return p.line, p.lineErr
	case <-t.C:
		return "", fmt.Errorf("no line on stdout within %s", d)
	}
}

// errExited is firstLineOrExit's error for a process that exited first.
var errExited = errors.New("exited before its first stdout line")

// firstLineOrExit is firstLine, except that it returns errExited as soon
// as the process exits without a line, and says "did not print its
// handshake within d" when d passes.
func (p *rawProcess) firstLineOrExit(d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.gotLine:
		return p.line, p.lineErr
	case <-p.exited:
		// The line may have come just before the exit.
		if line, err := p.firstLine(100 * time.Millisecond); line != "" || errors.Is(err, io.EOF) {
			return line, err
		}
		return "", errExited
	case <-t.C:
		return "", fmt.Errorf("did not print its handshake within %s", d)
	}
}

// wait waits up to d for the process to exit; it reports whether it did.
func (p *rawProcess) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitDescription describes how the process ended, once it has.
func (p *rawProcess) exitDescription() string {
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return "exit status 0"
	case errors.As(p.err, &ee):
		return ee.ProcessState.String()
	default:
		return p.err.Error()
	}
}

// stop kills the process and everything it started (its process tree)
// and waits for it. What could not be stopped is returned as a
// *plugin.LeftRunningError.
func (p *rawProcess) stop() error {
	select {
	case <-p.exited: // reaped: its pid may be another process's now
	default:
		killProcess(p.cmd.Process.Pid)
	}
	err := p.tree.Stop()
	<-p.exited
	return err
}

// tailBuffer is an io.Writer keeping the last max bytes written (at most
// 2×max in memory), whatever the total.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write implements io.Writer, keeping the last bytes written.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// String returns the kept bytes.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf[max(0, len(b.buf)-b.max):])
}

// handshakeEnv is plugin.HandshakeEnv with a fresh client certificate.
func handshakeEnv(versions []int) ([]string, error) {
	// The raw launches never connect: only the certificate is offered.
	_, pemCert, err := plugin.ClientCertificate()
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return plugin.HandshakeEnv(versions, pemCert), nil
}
