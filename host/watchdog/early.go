package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

// A first worker started early (Prestart) launches the plugins of the
// plan its watchdog is about to record while the record is made, and uses
// them once the run is handed over and its fold shows that very plan
// (docs/decisions.md, "The first worker launches its plugins before the
// hand-over").

// EarlyLaunchLog is the message plugins.log holds when the run uses the
// plugins its first worker launched before the hand-over.
const EarlyLaunchLog = "the plugins launched before the hand-over were launched from the plan the run recorded"

// earlyLine is what Prestarted.Send writes a first worker before the
// hand-over: the plan the run will record and the host variables its
// plugins need (handedEnv, and VerifiedEnv).
type earlyLine struct {
	Plan *plan.Plan        `json:"plan"`
	Env  map[string]string `json:"env"`
}

// maxEarly bounds the early line a first worker reads (bytes).
const maxEarly = 16 << 20

// sendEarly writes the early line for plan p to w: its length in decimal
// digits and a newline, then the JSON of earlyLine, whose variables are
// handedEnv(p) and, when there are any, the stamps of the verified cache
// entries (VerifiedEnv). The length lets the worker read exactly the line
// and nothing of the hand-over after it.
func sendEarly(w io.Writer, p *plan.Plan, verified map[string]plugin.FileStamp) error {
	env := handedEnv(p)
	if len(verified) > 0 {
		env[VerifiedEnv] = encodeStamps(verified)
	}
	b, err := json.Marshal(earlyLine{Plan: p, Env: env})
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(strconv.Itoa(len(b))+"\n"), b...))
	return err
}

// receiveEarly reads the early line sendEarly wrote from r, sets its
// variables in this process's environment (os.Setenv) and returns its
// plan. It reads nothing past the line. Anything else — a stream that
// ends first, a length that is no number or passes maxEarly, a line that
// is not earlyLine's JSON or holds no plan, a variable that cannot be
// set — is an error wrapping ErrNotFromWatchdog.
func receiveEarly(r io.Reader) (*plan.Plan, error) {
	var head []byte
	one := make([]byte, 1)
	for len(head) <= len(strconv.Itoa(maxEarly)) {
		if _, err := io.ReadFull(r, one); err != nil {
			return nil, fmt.Errorf("%w (stdin ended before the plan the watchdog sends first: %v)", ErrNotFromWatchdog, err)
		}
		if one[0] == '\n' {
			break
		}
		head = append(head, one[0])
	}
	n, err := strconv.Atoi(string(head))
	if err != nil || n <= 0 || n > maxEarly {
		return nil, fmt.Errorf("%w (the first line on stdin is not the length of the plan the watchdog sends first)", ErrNotFromWatchdog)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w (stdin ended within the plan the watchdog sends first: %v)", ErrNotFromWatchdog, err)
	}
	var line earlyLine
	if err := json.Unmarshal(b, &line); err != nil || line.Plan == nil {
		return nil, fmt.Errorf("%w (the plan the watchdog sends first is not a JSON object holding a plan: %v)", ErrNotFromWatchdog, err)
	}
	for k, v := range line.Env {
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("%w (the plan the watchdog sends first sets %q: %v)", ErrNotFromWatchdog, k, err)
		}
	}
	return line.Plan, nil
}

// earlyLaunch is a first worker's launch of the plugins of the plan its
// watchdog sent before the hand-over: their log is held until the run's
// plugins.log can be opened.
type earlyLaunch struct {
	plan     *plan.Plan
	launches *pluginLaunches
	held     *heldOutput
	logger   hclog.Logger
}

// launchEarly starts launching the plugins of plan p, with their log
// held (heldOutput), and returns at once.
func launchEarly(ctx context.Context, p *plan.Plan) *earlyLaunch {
	held := &heldOutput{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: held, Level: hclog.Debug, JSONFormat: true})
	return &earlyLaunch{plan: p, launches: launchPlugins(ctx, p, Policy(p), logger), held: held, logger: logger}
}

// abandon ends the early launches and closes what started; nil does
// nothing.
func (e *earlyLaunch) abandon() {
	if e != nil {
		e.launches.abandon()
	}
}

// errPlanDiffers says that the plan a first worker launched its plugins
// from is not the plan its run recorded.
var errPlanDiffers = errors.New("the plan sent before the hand-over is not the plan the run recorded")

// adopt returns the early launches for the run whose recorded start is
// rs, with their held log written to, and from now on going to, logf:
// when the plan they were launched from has the digest the run recorded
// for its plan. Otherwise it abandons them and returns an error wrapping
// errPlanDiffers; the caller launches the recorded plan's plugins.
func (e *earlyLaunch) adopt(rs *plan.RunStarted, logf io.Writer) (*pluginLaunches, hclog.Logger, error) {
	d, err := plan.Digest(e.plan)
	if err == nil && d != rs.PlanDigest {
		err = fmt.Errorf("%w (digest %s, recorded %s)", errPlanDiffers, d, rs.PlanDigest)
	} else if err != nil {
		err = fmt.Errorf("%w: %w", errPlanDiffers, err)
	}
	if err != nil {
		e.abandon()
		e.held.attach(logf)
		return nil, nil, err
	}
	e.held.attach(logf)
	return e.launches, e.logger, nil
}
