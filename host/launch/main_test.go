package launch_test

import (
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// TestMain bounds the fuzzer's minimizing of each new input
// (testutil.RunFuzzBounded): FuzzInstallArchive's inputs are whole
// archives, which no removal of bytes keeps whole, so minimizing one took
// the fuzzer's default 60 s at 0 execs/s.
func TestMain(m *testing.M) { testutil.RunFuzzBounded(m) }
