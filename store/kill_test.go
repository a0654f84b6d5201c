package store

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	killSeed  = flag.Uint64("store.killseed", 20260101, "seed of the kill test's schedule")
	killCount = flag.Int("store.kills", 200, "number of SIGKILLs in the kill test")
)

// ack is one acknowledged batch reported by a helper.
type ack struct {
	g, seq      int
	first, last int64
}

// TestKillAppender re-executes the test binary as an appender (three
// goroutines, conditional and unconditional batches, some spanning pages)
// and SIGKILLs it at random moments — sometimes while it is still opening
// (recovering) the run — many times over, reopening the run after each
// kill. Every acknowledged batch must be there, whole, and no partial batch
// may be visible. The schedule is seeded (-store.killseed) and logged.
func TestKillAppender(t *testing.T) {
	seed := *killSeed
	t.Logf("kill schedule seed %d, %d kills", seed, *killCount)
	rng := rand.New(rand.NewPCG(seed, 0))
	s, err := Open(t.TempDir(), "kill")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.CreateRun(context.Background(), "run", Policy{})
	r, _ := rec.(*Run)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	dir := s.RunDir("run")

	var totalAcks int
	var maxAcked int64
	for gen := 0; gen < *killCount; gen++ {
		early := rng.IntN(5) == 0 // kill before the helper reports ready
		delay := time.Duration(rng.IntN(20_000)) * time.Microsecond
		acks, ready, stderr := runAndKill(t, dir, gen, seed, early, delay)
		if !ready && !early {
			t.Fatalf("gen %d: helper never became ready: %s", gen, stderr)
		}
		totalAcks += len(acks)
		for _, a := range acks {
			maxAcked = max(maxAcked, a.last)
		}
		checkAfterKill(t, dir, gen, acks, maxAcked)
	}
	torn, _ := filepath.Glob(filepath.Join(dir, eventsFile+".torn-*"))
	temps, _ := filepath.Glob(filepath.Join(dir, eventsFile+cacheSuffix+".tmp-*"))
	if len(temps) > 1 {
		t.Errorf("cache temporary files of dead writers pile up: %v", temps)
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatalf("Verify after the kills: %v", err)
	}
	t.Logf("%d kills, %d acknowledged batches, %d events, %d torn tails recovered", *killCount, totalAcks, rep.Events, len(torn))
	if totalAcks == 0 {
		t.Fatal("no batch was ever acknowledged: the test exercised nothing")
	}
}

// runAndKill starts a helper appender for generation gen and SIGKILLs it
// after delay (counted from its "ready" line, or from the start when early).
// It returns the acknowledgements read from its stdout before it died.
func runAndKill(t *testing.T, dir string, gen int, seed uint64, early bool, delay time.Duration) ([]ack, bool, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=append", "STORE_DIR="+dir,
		fmt.Sprintf("STORE_GEN=%d", gen), fmt.Sprintf("STORE_SEED=%d", seed+uint64(gen)))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyc := make(chan struct{})
	var acks []ack
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return // a partial last line is not an acknowledgement
			}
			if line == "ready\n" {
				close(readyc)
				continue
			}
			var a ack
			if _, err := fmt.Sscanf(line, "ack %d %d %d %d\n", &a.g, &a.seq, &a.first, &a.last); err == nil {
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		}
	}()
	ready := false
	if early {
		time.Sleep(delay / 4)
	} else {
		select {
		case <-readyc:
			ready = true
			time.Sleep(delay)
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	<-done
	io.Copy(io.Discard, out)
	select {
	case <-readyc:
		ready = true
	default:
	}
	if strings.Contains(stderr.String(), "append:") || strings.Contains(stderr.String(), "open:") {
		t.Fatalf("gen %d: helper failed: %s", gen, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return acks, ready, stderr.String()
}

// checkAfterKill reopens the run and checks every acknowledged batch of
// generation gen and the absence of a partial batch.
func checkAfterKill(t *testing.T, dir string, gen int, acks []ack, maxAcked int64) {
	t.Helper()
	ctx := context.Background()
	r, err := OpenRunDir(ctx, dir, Policy{})
	if err != nil {
		t.Fatalf("gen %d: reopen after kill: %v", gen, err)
	}
	defer r.Close()
	rev := r.events.Rev()
	if rev < maxAcked {
		t.Fatalf("gen %d: stream ends at rev %d but rev %d was acknowledged", gen, rev, maxAcked)
	}
	from := rev
	for _, a := range acks {
		from = min(from, a.first)
	}
	type got struct {
		id       string
		batchEnd int64
	}
	seen := map[int64]got{}
	var last Event
	if err := r.events.Read(ctx, max(from, 1), func(e Event) error {
		seen[e.Rev] = got{e.ID, e.BatchEnd}
		last = e
		return nil
	}); err != nil {
		t.Fatalf("gen %d: read: %v", gen, err)
	}
	if rev > 0 && last.BatchEnd != rev {
		t.Fatalf("gen %d: last event rev %d belongs to a batch ending at %d: partial batch visible", gen, last.Rev, last.BatchEnd)
	}
	for _, a := range acks {
		for i := int64(0); i <= a.last-a.first; i++ {
			want := fmt.Sprintf("h%d-g%d-s%d-%d", gen, a.g, a.seq, i)
			g := seen[a.first+i]
			if g.id != want || g.batchEnd != a.last {
				t.Fatalf("gen %d: acknowledged batch %+v: rev %d is %+v, want id %s in a batch ending at %d",
					gen, a, a.first+i, g, want, a.last)
			}
		}
	}
}
