package watchdog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/obversa/obversa/host/plan"
)

// TestEarlyLineRoundTrip: receiveEarly gives back the plan sendEarly
// wrote, with the plan's pass_env variables set, and reads nothing of
// what follows the line (the hand-over).
func TestEarlyLineRoundTrip(t *testing.T) {
	t.Setenv("EARLY_TEST_PASS_ENV", "passed")
	p := &plan.Plan{RunID: "r1", Namespace: "default", Storage: plan.Storage{Directory: "/s"},
		Plugins: []plan.PluginPlan{{Name: "mock", Type: "engine", SHA256: "ab", PassEnv: []string{"EARLY_TEST_PASS_ENV", "UNSET_EARLY_TEST"}}}}
	var buf bytes.Buffer
	if err := sendEarly(&buf, p, nil); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("{\"handover\":1}\n")
	os.Unsetenv("EARLY_TEST_PASS_ENV")
	got, err := receiveEarly(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plan.Digest(p)
	if d, err := plan.Digest(got); err != nil || d != want {
		t.Errorf("plan digest %s (%v), want %s", d, err, want)
	}
	if v := os.Getenv("EARLY_TEST_PASS_ENV"); v != "passed" {
		t.Errorf("EARLY_TEST_PASS_ENV = %q, want passed", v)
	}
	if rest := buf.String(); rest != "{\"handover\":1}\n" {
		t.Errorf("left %q unread, want the hand-over line", rest)
	}
}

// TestEarlyAdoptChecksThePlan: early launches are used only for the run
// whose recorded plan digest is theirs.
func TestEarlyAdoptChecksThePlan(t *testing.T) {
	p := &plan.Plan{RunID: "r1", Namespace: "default"}
	e := &earlyLaunch{plan: p, launches: &pluginLaunches{done: make(chan pluginLaunch, 1), cancel: func() {}}, held: &heldOutput{}}
	e.launches.done <- pluginLaunch{}
	d, _ := plan.Digest(p)
	if _, _, err := e.adopt(&plan.RunStarted{PlanDigest: "sha256:other"}, io.Discard); !errors.Is(err, errPlanDiffers) {
		t.Errorf("adopt for another plan = %v, want errPlanDiffers", err)
	}
	e.launches.done <- pluginLaunch{}
	if l, _, err := e.adopt(&plan.RunStarted{PlanDigest: d}, io.Discard); err != nil || l != e.launches {
		t.Errorf("adopt for its plan = %v, %v; want its launches", l, err)
	}
}

// FuzzReceiveEarly: receiveEarly either returns a plan having read no
// byte past the length it was given, or refuses with ErrNotFromWatchdog.
func FuzzReceiveEarly(f *testing.F) {
	var ok bytes.Buffer
	_ = sendEarly(&ok, &plan.Plan{RunID: "r"}, nil)
	f.Add(ok.Bytes())
	f.Add([]byte("5\n{}"))
	f.Add([]byte("99999999999\n"))
	f.Add([]byte("2\n[]tail"))
	f.Add([]byte("11\n{\"plan\":{}}rest"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		p, err := receiveEarly(r)
		if err != nil {
			if !errors.Is(err, ErrNotFromWatchdog) {
				t.Fatalf("receiveEarly: %v, want ErrNotFromWatchdog", err)
			}
			return
		}
		if p == nil {
			t.Fatal("no plan and no error")
		}
		head, _, _ := bytes.Cut(in, []byte{'\n'})
		n, _ := strconv.Atoi(string(head))
		if read := len(in) - r.Len(); read != len(head)+1+n {
			t.Fatalf("read %d bytes, want the %d of the length line and the plan", read, len(head)+1+n)
		}
	})
}
