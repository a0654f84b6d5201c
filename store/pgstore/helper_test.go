package pgstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// Helper processes: the test binary re-executed with helperEnv=owner acts
// as one owner of a run — another process, possibly another "host"
// (OBVERSA_HOST) — driven by commands on stdin, one reply line each:
//
//	lock               → "locked <epoch>" | "refused <code> <message>"
//	lockwait           → "locked <epoch>" (retries every 50 ms)
//	append <exp> <n> <tag> → "ok <rev>" | "err <code> <message>"
//	lost               → "lost" | "held"
//
// It opens run PGSTORE_RUN of namespace PGSTORE_NAMESPACE (default "ns")
// in the database PGSTORE_URL (schema PGSTORE_SCHEMA), with a 2 s lease TTL
// renewed every 500 ms. With helperEnv=adopt it adopts the lease handed
// over instead (helperAdopt).
func runHelper(role string) int {
	ctx := context.Background()
	c, err := ParseURL(os.Getenv("PGSTORE_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	c.Schema, c.LocalDir = os.Getenv("PGSTORE_SCHEMA"), os.TempDir()
	c.LeaseTTL, c.RenewEvery = 2*time.Second, 500*time.Millisecond
	ns := os.Getenv("PGSTORE_NAMESPACE")
	if ns == "" {
		ns = "ns"
	}
	b, err := Open(ctx, c, ns)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	rec, err := b.OpenRun(ctx, os.Getenv("PGSTORE_RUN"), store.Policy{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	r := rec.(*Run)
	switch role {
	case "owner":
		return helperOwner(ctx, r)
	case "adopt":
		return helperAdopt(ctx, r)
	}
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	return 2
}

// helperAdopt adopts the lease handed over in LeaseEnv, appends one event
// of type $STORE_EVENT_TYPE at the revision it reads, and prints
// "ok <rev>" (or the error).
func helperAdopt(ctx context.Context, r *Run) int {
	own, err := r.Adopt(ctx)
	if err != nil {
		fmt.Printf("adopt: %v\n", err)
		return 4
	}
	defer own.Release()
	rev, err := r.Append(ctx, r.Rev(), store.NewEvent{Type: os.Getenv("STORE_EVENT_TYPE"), Data: map[string]int{"pid": os.Getpid()}})
	if err != nil {
		fmt.Printf("append: %v\n", err)
		return 4
	}
	fmt.Printf("ok %d\n", rev)
	return 0
}

// helperOwner serves the owner commands (see runHelper).
func helperOwner(ctx context.Context, r *Run) int {
	var lease *Lease
	oneLine := func(err error) string { return store.Code(err) + " " + strings.ReplaceAll(err.Error(), "\n", " ") }
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "lock", "lockwait":
			for {
				own, err := r.Lock(ctx)
				if err == nil {
					lease = own.(*Lease)
					fmt.Printf("locked %d\n", lease.Epoch())
					break
				}
				if f[0] == "lock" {
					fmt.Printf("refused %s\n", oneLine(err))
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		case "append":
			exp, _ := strconv.ParseInt(f[1], 10, 64)
			n, _ := strconv.Atoi(f[2])
			evs := make([]store.NewEvent, n)
			for i := range evs {
				evs[i] = store.NewEvent{ID: fmt.Sprintf("%s-%d", f[3], i), Type: "test:owner", Data: map[string]any{"tag": f[3], "i": i}}
			}
			rev, err := r.Append(ctx, exp, evs...)
			if err != nil {
				fmt.Printf("err %s\n", oneLine(err))
			} else {
				fmt.Printf("ok %d\n", rev)
			}
		case "lost":
			select {
			case <-lease.Lost():
				fmt.Println("lost")
			default:
				fmt.Println("held")
			}
		default:
			fmt.Printf("unknown command %q\n", f[0])
		}
	}
	return 0
}

// owner is a running helper process.
type owner struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	name string
}

// startOwner starts a helper owning run id of the schema, on host host;
// its database connections carry application_name app.
func startOwner(t *testing.T, schema, id, host, app string) *owner {
	t.Helper()
	u, err := url.Parse(testURL(t))
	must(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=owner", "PGSTORE_URL="+u.String(), "PGSTORE_SCHEMA="+schema,
		"PGSTORE_RUN="+id, store.HostEnv+"="+host)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	o := &owner{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out), name: host}
	t.Cleanup(o.kill)
	return o
}

// do sends a command and returns the reply line.
func (o *owner) do(cmd string) string {
	o.t.Helper()
	if _, err := fmt.Fprintln(o.in, cmd); err != nil {
		o.t.Fatalf("owner %s: send %q: %v", o.name, cmd, err)
	}
	return o.reply()
}

// reply reads the next reply line (at most 30 s).
func (o *owner) reply() string {
	o.t.Helper()
	got := make(chan string, 1)
	go func() {
		if o.out.Scan() {
			got <- o.out.Text()
		}
		close(got)
	}()
	select {
	case line, ok := <-got:
		if !ok {
			o.t.Fatalf("owner %s exited without replying", o.name)
		}
		return line
	case <-time.After(30 * time.Second):
		o.t.Fatalf("owner %s did not reply", o.name)
	}
	return ""
}

// send sends a command without waiting for its reply.
func (o *owner) send(cmd string) {
	o.t.Helper()
	if _, err := fmt.Fprintln(o.in, cmd); err != nil {
		o.t.Fatalf("owner %s: send %q: %v", o.name, cmd, err)
	}
}

func (o *owner) signal(sig syscall.Signal) {
	o.t.Helper()
	must(o.t, o.cmd.Process.Signal(sig))
}

// kill SIGKILLs the helper and reaps it.
func (o *owner) kill() {
	if o.cmd.ProcessState == nil {
		o.cmd.Process.Signal(syscall.SIGCONT)
		o.cmd.Process.Kill()
		o.cmd.Wait()
	}
}

// adoptInChild re-runs the test binary as a helper (role "adopt") with the
// lease in its environment; it adopts it and appends one event.
func adoptInChild(t *testing.T, b store.Backend, id string, own store.Ownership) (int64, error) {
	t.Helper()
	be := b.(*Backend)
	env, files := own.Handoff()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"=adopt", "PGSTORE_URL="+testURL(t), "PGSTORE_SCHEMA="+be.cfg.Schema,
		"PGSTORE_NAMESPACE="+be.ns, "PGSTORE_RUN="+id, "STORE_EVENT_TYPE=storetest:adopted"), env...)
	cmd.ExtraFiles = files
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("helper: %v: %s", err, out.String())
	}
	var rev int64
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "ok %d", &rev); err != nil {
		return 0, fmt.Errorf("helper said %q", out.String())
	}
	return rev, nil
}
