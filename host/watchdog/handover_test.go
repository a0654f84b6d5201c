package watchdog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func TestStampsRoundTrip(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	in := map[string]plugin.FileStamp{digest: {Dev: 1, Ino: 2, Size: 3, Mode: 0o100555, UID: 4, MtimeNS: 5, CtimeNS: 6}}
	out, err := decodeStamps(encodeStamps(in))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("decodeStamps(encodeStamps(x)) differs (-in +out):\n%s", d)
	}
	if out, err := decodeStamps(""); out != nil || err != nil {
		t.Errorf("decodeStamps(\"\") = %v, %v; want nothing", out, err)
	}
	for _, bad := range []string{"[]", "{", `{"ABAB":{}}`, `{"` + strings.Repeat("AB", 32) + `":{}}`, `{"` + digest + `":1}`} {
		if _, err := decodeStamps(bad); err == nil || !strings.Contains(err.Error(), VerifiedEnv) {
			t.Errorf("decodeStamps(%q) = %v, want an error naming %s", bad, err, VerifiedEnv)
		}
	}
}

// FuzzDecodeStamps: any value decodes to stamps keyed by digests, or an
// error naming the variable; what decodes survives a round trip.
func FuzzDecodeStamps(f *testing.F) {
	f.Add(encodeStamps(map[string]plugin.FileStamp{strings.Repeat("0", 64): {Ino: 1}}))
	f.Add(`{"x":{}}`)
	f.Add("null")
	f.Fuzz(func(t *testing.T, v string) {
		stamps, err := decodeStamps(v)
		if err != nil {
			if !strings.Contains(err.Error(), VerifiedEnv) {
				t.Fatalf("error %v does not name %s", err, VerifiedEnv)
			}
			return
		}
		for d := range stamps {
			if len(d) != 64 {
				t.Fatalf("accepted digest %q", d)
			}
		}
		again, err := decodeStamps(encodeStamps(stamps))
		if err != nil || len(again) != len(stamps) {
			t.Fatalf("round trip of %v: %v, %v", stamps, again, err)
		}
	})
}

// TestWorkerEnvDropsInheritedStamps: OBVERSA_VERIFIED_CACHE from the
// shell that started the watchdog never reaches a worker or the keeper
// (hostenv passes OBVERSA_* through): only stamps this watchdog took may.
func TestWorkerEnvDropsInheritedStamps(t *testing.T) {
	t.Setenv(VerifiedEnv, `{"`+strings.Repeat("a", 64)+`":{}}`)
	t.Setenv("OBVERSA_WORKER_CPUPROFILE", "/tmp/p") // other OBVERSA_ variables pass
	env := workerEnv("marker", nil)
	passed := false
	for _, kv := range env {
		if strings.HasPrefix(kv, VerifiedEnv+"=") {
			t.Errorf("the worker's environment holds the shell's %s", kv)
		}
		passed = passed || kv == "OBVERSA_WORKER_CPUPROFILE=/tmp/p"
	}
	if !passed {
		t.Errorf("OBVERSA_WORKER_CPUPROFILE was dropped: %v", env)
	}
}

// TestWorkerEnvKeepsGCSettings: GOGC and GOMEMLIMIT given to the
// watchdog reach its worker (they override the worker's own collection
// policy); other Go runtime variables do not.
func TestWorkerEnvKeepsGCSettings(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	t.Setenv("GOTRACEBACK", "crash")
	env := workerEnv("marker", nil)
	for _, want := range []string{"GOGC=150", "GOMEMLIMIT=1GiB"} {
		if !slices.Contains(env, want) {
			t.Errorf("the worker's environment lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOTRACEBACK=") {
			t.Errorf("the worker's environment holds %s", kv)
		}
	}
}

// TestReceiveEnvNotFromWatchdog: a stdin that ends before the watchdog's
// first line, or whose first line is not its JSON object, is a worker or
// keeper started by hand: the error says who starts them and what to run.
func TestReceiveEnvNotFromWatchdog(t *testing.T) {
	for _, in := range []string{"", "{\"A\":", "hello\n", "[]\n"} {
		_, err := receiveEnv(strings.NewReader(in))
		if !errors.Is(err, ErrNotFromWatchdog) || !strings.Contains(err.Error(), "obversa resume RUN") {
			t.Errorf("receiveEnv(%q) = %v, want ErrNotFromWatchdog naming obversa resume", in, err)
		}
	}
	if _, err := receiveEnv(strings.NewReader("{}\nrest")); err != nil {
		t.Errorf("receiveEnv of the watchdog's line: %v", err)
	}
}
