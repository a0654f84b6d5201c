package snapcodec

import (
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// TestMain bounds the fuzzer's minimizing of each new input
// (testutil.RunFuzzBounded): this package's fuzz inputs are whole
// snapshot payloads of a few KB, which no removal of bytes keeps whole.
func TestMain(m *testing.M) { testutil.RunFuzzBounded(m) }
