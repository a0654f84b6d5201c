package snapcodec

import (
	"flag"
	"os"
	"testing"
)

// TestMain bounds the fuzzer's minimizing of each new input to 1 s
// unless -fuzzminimizetime is given: the fuzz test's inputs are
// whole payloads of a few KB, and minimizing one that reached new code
// took the default 60 s (every removal of bytes breaks the payload's
// framing, so nothing shrinks), during which the fuzzer ran nothing
// else and reported 0 execs/s.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.fuzzminimizetime" })
	if !given {
		if err := flag.Set("test.fuzzminimizetime", "1s"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
