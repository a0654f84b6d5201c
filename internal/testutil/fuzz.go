package testutil

import (
	"flag"
	"os"
	"testing"
)

// FuzzMinimizeTime is how long the fuzzer may spend minimizing one new
// input when a package's TestMain calls RunFuzzBounded and the command
// line does not give -fuzzminimizetime.
const FuzzMinimizeTime = "1s"

// RunFuzzBounded parses the test flags, sets -test.fuzzminimizetime to
// FuzzMinimizeTime unless the command line gave it, runs the tests and
// exits with their status. A package whose fuzz inputs are whole framed
// payloads calls it from TestMain: no removal of bytes keeps such a
// payload's framing, so minimizing an input that reached new code took
// Go's default 60 s, during which the fuzzer executed nothing else and
// reported 0 execs/s. It panics if the flag cannot be set (a Go release
// that renamed it).
func RunFuzzBounded(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.fuzzminimizetime" })
	if !given {
		if err := flag.Set("test.fuzzminimizetime", FuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
