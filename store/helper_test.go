package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// runHelper runs the test binary as a helper process (TestMain dispatches
// here when helperEnv is set). Parameters come in STORE_* variables; the
// helper reports on stdout, one line per fact.
func runHelper(role string) int {
	switch role {
	case "append":
		return helperAppend()
	case "race":
		return helperRace()
	case "lock":
		return helperLock()
	case "adopt":
		return helperAdopt()
	case "writer":
		return helperWriter()
	case "hold":
		// Keep inherited descriptors (a run lock) until stdin closes.
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	return 2
}

// helperRun opens STORE_DIR for a helper, reporting a failure on stderr.
func helperRun(ctx context.Context) (*Run, bool) {
	r, err := OpenRunDir(ctx, os.Getenv("STORE_DIR"), Policy{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "open: %v\n", err)
		return nil, false
	}
	return r, true
}

func envInt(name string) int64 {
	v, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return v
}

// helperAppend opens STORE_DIR (recovering it), prints "ready", then
// appends batches from three goroutines until killed — each conditional,
// taking the current revision on a conflict; some batches have 16 KB or
// 128 KB events, so that their write spans many pages (a kill can land in
// the middle of it) — and prints "ack <g> <seq> <first> <last>" after each
// acknowledged batch.
func helperAppend() int {
	ctx := context.Background()
	gen, seed := envInt("STORE_GEN"), uint64(envInt("STORE_SEED"))
	r, ok := helperRun(ctx)
	if !ok {
		return 3
	}
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		os.Stdout.WriteString(s)
		mu.Unlock()
	}
	say("ready\n")
	pad, hugePad := strings.Repeat("x", 16000), strings.Repeat("y", 128<<10)
	for g := 0; g < 3; g++ {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for seq := 0; ; seq++ {
				n := 1 + rng.IntN(4)
				size := rng.IntN(64) // 0: huge, 1..7: big, else small
				evs := make([]NewEvent, n)
				for i := range evs {
					data := map[string]any{"g": g, "s": seq, "i": i}
					switch {
					case size == 0:
						data["pad"] = hugePad
					case size < 8:
						data["pad"] = pad
					}
					evs[i] = NewEvent{ID: fmt.Sprintf("h%d-g%d-s%d-%d", gen, g, seq, i), Type: "test:kill", Data: data}
				}
				var last int64
				var err error
				exp := r.events.Rev()
				for {
					last, err = r.events.Append(ctx, exp, evs...)
					var ce *ConflictError
					if errors.As(err, &ce) {
						exp = ce.Current
						continue
					}
					break
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "append: %v\n", err)
					os.Exit(4)
				}
				say(fmt.Sprintf("ack %d %d %d %d\n", g, seq, last-int64(n)+1, last))
			}
		}()
	}
	select {}
}

// helperRace opens STORE_DIR, prints "ready", then for each line "<rev>"
// on stdin appends one event with expectedRev <rev> and prints "ok <rev>"
// or "err <code>".
func helperRace() int {
	ctx := context.Background()
	r, ok := helperRun(ctx)
	if !ok {
		return 3
	}
	defer r.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	name := os.Getenv("STORE_NAME")
	for in.Scan() {
		exp, _ := strconv.ParseInt(in.Text(), 10, 64)
		rev, err := r.events.Append(ctx, exp, NewEvent{ID: fmt.Sprintf("%s-%d", name, exp), Type: "test:race", Data: name})
		if err != nil {
			fmt.Printf("err %s\n", Code(err))
		} else {
			fmt.Printf("ok %d\n", rev)
		}
	}
	return 0
}

// helperAdopt opens STORE_DIR, adopts the ownership handed to it and
// appends one event (of type STORE_EVENT_TYPE, default "test:adopted"),
// printing "ok <rev> env=<LockFDEnv after Adopt> cloexec=<bool>" or
// "err <code>", then holds the ownership until stdin closes.
func helperAdopt() int {
	ctx := context.Background()
	r, ok := helperRun(ctx)
	if !ok {
		return 3
	}
	defer r.Close()
	fd := os.Getenv(LockFDEnv)
	own, err := r.Adopt(ctx)
	if err != nil {
		fmt.Printf("err %s\n", Code(err))
		return 0
	}
	typ := os.Getenv("STORE_EVENT_TYPE")
	if typ == "" {
		typ = "test:adopted"
	}
	rev, err := r.Append(ctx, r.Rev(), NewEvent{Type: typ})
	if err != nil {
		fmt.Printf("err %s\n", Code(err))
		return 0
	}
	n, _ := strconv.Atoi(fd)
	flags, _ := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	fmt.Printf("ok %d env=%s cloexec=%v\n", rev, os.Getenv(LockFDEnv), flags&unix.FD_CLOEXEC != 0)
	bufio.NewReader(os.Stdin).ReadString('\n')
	own.Release()
	return 0
}

// helperLock opens STORE_DIR, takes the run lock (printing "locked" or
// "refused <code>"), and holds it until stdin closes.
func helperLock() int {
	r, ok := helperRun(context.Background())
	if !ok {
		return 3
	}
	l, err := r.Lock(context.Background())
	if err != nil {
		fmt.Printf("refused %s\n", Code(err))
		return 0
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
	time.Sleep(time.Millisecond)
	l.Release()
	return 0
}

// helperWriter opens STORE_DIR for writing and prints "open", then for
// each line "append" on stdin appends one event and prints "ok <rev>";
// when stdin closes it closes the run and prints "closed".
func helperWriter() int {
	ctx := context.Background()
	r, ok := helperRun(ctx)
	if !ok {
		return 3
	}
	fmt.Println("open")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		rev, err := r.events.Append(ctx, r.events.Rev(), NewEvent{Type: "test:writer", Data: os.Getpid()})
		if err != nil {
			fmt.Printf("err %s\n", Code(err))
			continue
		}
		fmt.Printf("ok %d\n", rev)
	}
	if err := r.Close(); err != nil {
		fmt.Printf("err %s\n", Code(err))
		return 0
	}
	fmt.Println("closed")
	return 0
}
