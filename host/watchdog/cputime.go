package watchdog

import (
	"encoding/json"
	"os"
	"runtime/metrics"
	"time"

	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
)

// CPUTimeEnv names a file the worker writes, when its executor returns,
// the CPU time (user and system) it and each of its plugin processes
// used while the executor ran, as JSON (CPUTime). The benchmarks set it
// to report a node's CPU cost on each side of the plugin connection,
// which a loaded machine disturbs far less than wall time
// (docs/decisions.md, "Benchmarks"). Unset, nothing is measured.
const CPUTimeEnv = "OBVERSA_WORKER_CPUTIME"

// CPUTime is what a worker writes to the file CPUTimeEnv names.
type CPUTime struct {
	// WorkerNs is the worker process's CPU time, all threads, in ns.
	WorkerNs int64 `json:"worker_ns"`
	// PluginsNs is each plugin process's CPU time, all threads, in ns,
	// by plugin name; a plugin whose time could not be read (it exited,
	// or the platform does not tell) is left out. The processes a plugin
	// started are not counted.
	PluginsNs map[string]int64 `json:"plugins_ns"`
	// WorkerGCs is how many garbage collections the worker ran in that
	// time (docs/decisions.md, "The worker collects garbage late").
	WorkerGCs int64 `json:"worker_gcs"`
	// WorkerAllocBytes is how many bytes the worker's Go heap allocated
	// in that time, freed or not (runtime/metrics /gc/heap/allocs:bytes).
	WorkerAllocBytes int64 `json:"worker_alloc_bytes"`
	// WorkerSleeps is how many times the worker's threads gave up their
	// CPU to wait in that time (proc.SelfSleeps: voluntary context
	// switches); 0 where the platform does not tell.
	WorkerSleeps int64 `json:"worker_sleeps"`
}

// cpuClock samples the CPU time of this process and of clients'
// processes; its zero value measures nothing.
type cpuClock struct {
	path    string
	clients map[string]*plugin.Client
	self    time.Duration
	plugins map[string]time.Duration
	gcs     uint64
	allocs  uint64 // bytes
	sleeps  int64
}

// startCPUClock starts measuring when CPUTimeEnv names a file.
func startCPUClock(clients map[string]*plugin.Client) cpuClock {
	c := cpuClock{path: os.Getenv(CPUTimeEnv), clients: clients}
	if c.path != "" {
		c.self, c.plugins = c.sample()
		c.gcs, c.allocs = heapCounts()
		c.sleeps, _ = proc.SelfSleeps()
	}
	return c
}

// heapCounts is how many garbage collections this process has run and
// how many bytes its heap has allocated.
func heapCounts() (gcs, allocBytes uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

func (c cpuClock) sample() (self time.Duration, plugins map[string]time.Duration) {
	self, _ = proc.SelfCPU()
	plugins = map[string]time.Duration{}
	for name, cl := range c.clients {
		if d, err := proc.CPU(cl.Pid()); err == nil {
			plugins[name] = d
		}
	}
	return self, plugins
}

// stop writes what was used since startCPUClock; a failure to write is
// returned for the caller to log.
func (c cpuClock) stop() error {
	if c.path == "" {
		return nil
	}
	self, plugins := c.sample()
	gcs, allocs := heapCounts()
	sleeps, err := proc.SelfSleeps()
	if err != nil {
		sleeps = c.sleeps
	}
	out := CPUTime{WorkerNs: (self - c.self).Nanoseconds(), PluginsNs: map[string]int64{},
		WorkerGCs: int64(gcs - c.gcs), WorkerAllocBytes: int64(allocs - c.allocs), WorkerSleeps: sleeps - c.sleeps}
	for name, d := range plugins {
		if d0, ok := c.plugins[name]; ok {
			out.PluginsNs[name] = (d - d0).Nanoseconds()
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(c.path, b, 0o644)
}
