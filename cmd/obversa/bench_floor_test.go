package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// BenchmarkFloor measures, in the same test process and on the same file
// system as the graph benchmarks, what one node cannot avoid: a
// write+fdatasync of one event line, a unary gRPC round trip to a plugin
// child process, and the launch of the mock engine with go-plugin
// (process start, handshake, mTLS). Each reports "ms" per operation;
// internal/benchtable divides the graph figures by them (docs/decisions.md,
// "Benchmarks"). BenchmarkFloorAfter takes the same samples again once the
// graph benchmarks have run.
func BenchmarkFloor(b *testing.B) { floorSuite(b) }

// floorSuite runs the floor operations as sub-benchmarks of b:
// "fdatasync" (an appended line), "fdatasync-prezeroed" (a line written
// over a region of the file zeroed and synced beforehand, as a store with
// a pre-zeroed tail writes), "grpc-round-trip" and "plugin-launch".
func floorSuite(b *testing.B) {
	for _, f := range []struct {
		name  string
		write func(b *testing.B, dir string, ops int) time.Duration
	}{{"fdatasync", rawFdatasync}, {"fdatasync-prezeroed", prezeroedFdatasync}} {
		b.Run(f.name, func(b *testing.B) {
			const ops = 200
			var total time.Duration
			for b.Loop() {
				total += f.write(b, b.TempDir(), ops)
			}
			b.ReportMetric(ms(total)/float64(b.N*ops), "ms")
		})
	}
	b.Run("grpc-round-trip", func(b *testing.B) {
		c := launchMock(b)
		defer c.Close()
		eng, err := c.Engine()
		if err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		req := plugin.AdmitRequest{Target: plugin.Identity{Adapter: "mock", Provider: "local", Model: "m1"}}
		// The first calls warm the connection up.
		for range 20 {
			if _, err := eng.Admit(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		const ops = 500
		var total time.Duration
		self0, plugin0 := cpuUsed(b, c.Pid())
		for b.Loop() {
			start := time.Now()
			for range ops {
				if _, err := eng.Admit(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			total += time.Since(start)
		}
		b.ReportMetric(ms(total)/float64(b.N*ops), "ms")
		reportCPU(b, c.Pid(), self0, plugin0, b.N*ops)
	})
	b.Run("plugin-launch", func(b *testing.B) {
		const ops = 5
		cp := mockCopy(b)
		var total time.Duration
		for b.Loop() {
			for range ops {
				start := time.Now()
				c := launchCopy(b, cp)
				total += time.Since(start)
				c.Close()
			}
		}
		b.ReportMetric(ms(total)/float64(b.N*ops), "ms")
	})
}

// launchMock starts the mock engine from a verified cache copy, as a
// worker does.
func launchMock(b *testing.B) *plugin.Client {
	b.Helper()
	return launchCopy(b, mockCopy(b))
}

// mockCopy places the mock engine in a cache directory kept for the test
// binary's life (a warm cache, as a repeated run has).
func mockCopy(b *testing.B) *plugin.Copied {
	b.Helper()
	dir := filepath.Join(binDir, "cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	cp, err := plugin.CopyBinary("mock", filepath.Join(binDir, "mock-engine"), dir, plugin.CopyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return cp
}

// launchCopy launches a verified copy of the mock engine.
func launchCopy(b *testing.B, cp *plugin.Copied) *plugin.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pluginhost.Launch(ctx, plugin.LaunchConfig{Name: "mock", Type: plugin.TypeEngine,
		Path: cp.Path, SHA256: cp.SHA256, Verified: true, Env: launch.Env(nil)})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// floorLine is one event line of the fdatasync floors: 512 bytes.
var floorLine = []byte(strings.Repeat("x", 511) + "\n")

// rawFdatasync measures write+fdatasync of one 512-byte line appended to
// a file in dir, ops times, and returns the total.
func rawFdatasync(b *testing.B, dir string, ops int) time.Duration {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "raw.bin"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	for range ops {
		if _, err := f.Write(floorLine); err != nil {
			b.Fatal(err)
		}
		if err := datasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// prezeroedFdatasync measures write+fdatasync of one 512-byte line, ops
// times, each written over the next 512 bytes of a region of a file in
// dir that was written with zeros and synced before the clock starts: the
// file's size does not change, so fdatasync has no inode size to journal.
// It returns the total.
func prezeroedFdatasync(b *testing.B, dir string, ops int) time.Duration {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "prezeroed.bin"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, ops*len(floorLine))); err != nil {
		b.Fatal(err)
	}
	if err := datasync(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range ops {
		if _, err := f.WriteAt(floorLine, int64(i*len(floorLine))); err != nil {
			b.Fatal(err)
		}
		if err := datasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// BenchmarkEngineRun measures one Run call of the mock engine through the
// plugin client, as a chain node makes it (three streamed text deltas, a
// usage event, the result): the plugin's share of a node, beside
// Floor/grpc-round-trip. Both also report the CPU time per call on each
// side (host-cpu-us, plugin-cpu-us).
func BenchmarkEngineRun(b *testing.B) {
	c := launchMock(b)
	defer c.Close()
	eng, err := c.Engine()
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	req := plugin.RunRequest{Purpose: plugin.PurposeOrdinary, RunID: "r", NodeID: "n", Position: "dag/n/1",
		AttemptID: "a", Target: plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1"},
		Prompt: "p", WorkspaceDir: b.TempDir()}
	emitted := 0
	emit := func(plugin.RunEvent) error { emitted++; return nil }
	const ops = 200
	var total time.Duration
	self0, plugin0 := cpuUsed(b, c.Pid())
	for b.Loop() {
		start := time.Now()
		for range ops {
			if _, err := eng.Run(ctx, req, emit); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(ms(total)/float64(b.N*ops), "ms")
	b.ReportMetric(float64(emitted)/float64(b.N*ops), "events/call")
	reportCPU(b, c.Pid(), self0, plugin0, b.N*ops)
}

// reportCPU reports the CPU time per call of this process (the host's
// side, "host-cpu-us") and of the plugin process pid ("plugin-cpu-us")
// since self0 and plugin0 (cpuUsed), over calls calls.
func reportCPU(b *testing.B, pid int, self0, plugin0 time.Duration, calls int) {
	b.Helper()
	self, plugin := cpuUsed(b, pid)
	if self == 0 && plugin == 0 {
		return // not measured on this platform
	}
	b.ReportMetric(float64((self-self0).Microseconds())/float64(calls), "host-cpu-us")
	b.ReportMetric(float64((plugin-plugin0).Microseconds())/float64(calls), "plugin-cpu-us")
}
