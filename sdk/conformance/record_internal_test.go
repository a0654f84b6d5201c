package conformance

import (
	"testing"

	"github.com/obversa/obversa/hcl"
)

// TestDefaultMaxArtifactBytes: the kit judges a result's size by the
// bound a run keeps by default.
func TestDefaultMaxArtifactBytes(t *testing.T) {
	if defaultMaxArtifactBytes != hcl.DefaultMaxArtifactBytes {
		t.Errorf("the kit's bound is %d bytes, a run's default max_artifact_bytes %d", defaultMaxArtifactBytes, hcl.DefaultMaxArtifactBytes)
	}
}
