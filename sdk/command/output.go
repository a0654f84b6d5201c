package command

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// eofWait is how long Run waits, once the command and its process tree
// are stopped, for its output pipes to end before it looks for who still
// holds them. It is not a correctness bound: a reader that is merely slow
// (a busy machine, a slow StdoutTee) then reads what the pipe still holds
// without waiting and reaches the end, because every writer is gone. Only
// a process outside the stopped tree can keep a pipe from ending, and it
// delays Run by at most this long.
const eofWait = 250 * time.Millisecond

// capture collects one output stream up to limit bytes.
type capture struct {
	name       string
	limit      int64 // 0: unlimited
	buf        bytes.Buffer
	overflowed bool
	tee        io.Writer // optional copy of what is kept
	// ended is set when the reader reached the end of the pipe: every
	// process that held its write end had closed it.
	ended bool
}

// read copies f into the buffer until the end of the pipe, reports the
// first overflow on over, keeps reading past the limit so the writer never
// blocks on a full pipe, and signals done. When Run gives up waiting for
// the end (a read deadline, see finishOutput), read takes what the pipe
// holds without waiting and stops.
func (c *capture) read(f *os.File, over chan<- *capture, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	chunk := make([]byte, 32*1024)
	for {
		n, err := f.Read(chunk)
		c.keep(chunk[:n], over)
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			c.ended = true
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.ended = readBuffered(f, chunk, func(b []byte) { c.keep(b, over) })
		}
		return
	}
}

// keep appends data up to the limit, copies what it keeps to the tee and
// reports the first overflow on over.
func (c *capture) keep(data []byte, over chan<- *capture) {
	if len(data) == 0 {
		return
	}
	if c.limit > 0 {
		room := c.limit - int64(c.buf.Len())
		if int64(len(data)) > room {
			data = data[:max(room, 0)]
			if !c.overflowed {
				c.overflowed = true
				over <- c
			}
		}
	}
	c.buf.Write(data)
	if c.tee != nil && len(data) > 0 {
		_, _ = c.tee.Write(data)
	}
}

// bytes returns the captured output; nil when nothing was written. Only
// valid after read returned.
func (c *capture) bytes() []byte {
	if c.buf.Len() == 0 {
		return nil
	}
	return c.buf.Bytes()
}

// finishOutput waits for both readers to reach the end of their pipes.
// It is called once the command's tree is stopped, so every writer Run
// knows of is gone. After eofWait it names the processes still holding a
// pipe, makes the readers take what the pipes hold without waiting and
// records the holders for cutReason. The pipes are closed on return.
func (r *running) finishOutput() {
	p := r.p
	defer func() {
		_ = p.stdoutR.Close()
		_ = p.stderrR.Close()
	}()
	t := time.NewTimer(eofWait)
	defer t.Stop()
	n := 0
wait:
	for n < 2 {
		select {
		case <-r.readers:
			n++
		case <-t.C:
			break wait
		}
	}
	if n == 2 {
		return
	}
	r.holders = pipeHolders(p.stdoutR, p.stderrR)
	for _, f := range []*os.File{p.stdoutR, p.stderrR} {
		if f.SetReadDeadline(time.Now()) != nil {
			// No deadlines on this pipe: closing it ends the read.
			_ = f.Close()
		}
	}
	for ; n < 2; n++ {
		<-r.readers
	}
}

// cutReason describes, in words, the streams whose reading stopped before
// their end; "" when both were read to the end.
func (r *running) cutReason() string {
	var cut []string
	for _, c := range []*capture{r.stdout, r.stderr} {
		if !c.ended {
			cut = append(cut, c.name)
		}
	}
	if len(cut) == 0 {
		return ""
	}
	who := "a process outside the command's process tree (not visible in /proc to this user)"
	if len(r.holders) > 0 {
		names := make([]string, len(r.holders))
		for i, h := range r.holders {
			names[i] = fmt.Sprintf("pid %d (%s)", h.PID, h.Name)
		}
		who = strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s still held open by %s %v after the command and its process tree were stopped; what was written before is kept, anything written later is not",
		strings.Join(cut, " and "), who, eofWait)
}
