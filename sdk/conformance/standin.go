package conformance

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/obversa/obversa/plugin"
)

// robust.host_death needs a host that can die. The kit re-executes the
// program it runs in (the obversa CLI, a test binary: anything that links
// this package) as a stand-in host: this package's init sees
// standInEnv, starts the plugin as the host does, reports it, and waits to
// be killed. Killing the stand-in is a host's death as the plugin sees it.

// standInEnv carries the stand-in host's instructions (JSON standInJob).
const standInEnv = "OBVERSA_CONFORMANCE_STAND_IN_HOST"

// standInJob is what the stand-in host starts.
type standInJob struct {
	Bin  string   `json:"bin"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	// Handshake bounds the wait for the plugin's handshake line: the
	// kit's Options.HandshakeTimeout.
	Handshake time.Duration `json:"handshake"`
}

// standInReport is the one line the stand-in host prints on stdout.
type standInReport struct {
	Pid   int    `json:"pid"`
	Line  string `json:"line"`
	Error string `json:"error,omitempty"`
}

func init() {
	if raw, ok := os.LookupEnv(standInEnv); ok {
		os.Exit(standInHost(raw))
	}
}

// standInHost runs the stand-in host and returns its exit status: 1 when
// the job is invalid or the plugin cannot start; otherwise it never
// returns.
func standInHost(raw string) int {
	out := json.NewEncoder(os.Stdout)
	var job standInJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		_ = out.Encode(standInReport{Error: "stand-in host: " + err.Error()})
		return 1
	}
	// The stand-in is in the kit's tree for it (startStandIn), cgroup
	// included: the plugin needs no group of its own.
	p, err := rawStart(job.Bin, job.Args, job.Env, nil, false)
	if err != nil {
		_ = out.Encode(standInReport{Error: err.Error()})
		return 1
	}
	rep := standInReport{Pid: p.cmd.Process.Pid}
	if _, err := p.handshake(cmp.Or(job.Handshake, DefaultHandshakeTimeout)); err != nil {
		rep.Error = err.Error()
	}
	rep.Line = p.line
	_ = out.Encode(rep)
	select {} // the kit kills this process: the host's death
}

// standIn is a running stand-in host and the plugin it started.
type standIn struct {
	cmd    *exec.Cmd
	tree   *plugin.ProcessTree
	report standInReport
}

// startStandIn starts the stand-in host for bin and waits for its report,
// the plugin's handshake bounded by handshake.
func startStandIn(bin string, args, env []string, handshake time.Duration) (*standIn, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating this program to re-execute it as a stand-in host: %w", err)
	}
	// The stand-in and the plugin it starts are one tree (the plugin
	// carries its marker, and is in its cgroup), which stop ends.
	tree := plugin.NewProcessTree("stand-in host", true)
	job, err := json.Marshal(standInJob{Bin: bin, Args: args, Env: append(append([]string{}, env...), tree.Marker()), Handshake: handshake})
	if err != nil {
		_ = tree.Stop()
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{standInEnv + "=" + string(job)}
	tree.Prepare(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = tree.Stop()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = tree.Stop()
		return nil, fmt.Errorf("starting the stand-in host: %w", err)
	}
	tree.Started(cmd.Process.Pid)
	s := &standIn{cmd: cmd, tree: tree}
	lines := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), maxHandshakeLine*2)
		if !sc.Scan() {
			lines <- errors.New("the stand-in host printed nothing")
			return
		}
		lines <- json.Unmarshal(sc.Bytes(), &s.report)
	}()
	select {
	case err = <-lines:
	case <-time.After(handshake + 5*time.Second):
		err = errors.New("the stand-in host did not report within its handshake wait")
	}
	if err == nil && s.report.Error != "" {
		err = errors.New(s.report.Error)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// die kills the stand-in host at once and reaps it.
func (s *standIn) die() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// stop kills the stand-in host, the plugin it started and whatever that
// started (the tree), and reaps the host.
func (s *standIn) stop() {
	if s.report.Pid > 0 {
		killProcess(s.report.Pid)
	}
	_ = s.cmd.Process.Kill()
	_ = s.tree.Stop()
	_ = s.cmd.Wait()
}
