package pgstore

import (
	"fmt"
	"os"
)

// runHelper runs the test binary as a helper process (TestMain dispatches
// here when helperEnv is set).
func runHelper(role string) int {
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	return 2
}
