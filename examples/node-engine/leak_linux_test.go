package nodeengine_test

import (
	"testing"

	"github.com/obversa/obversa/internal/exampletest"
)

// TestNothingLeft checks that the engine, closed or killed, leaves nothing
// in its TMPDIR or of its socket directory: it listens in the directory
// the host gives it.
func TestNothingLeft(t *testing.T) {
	node.Need(t)
	exampletest.CheckNothingLeft(t, launcher())
}
