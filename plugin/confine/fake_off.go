//go:build !failpoints

package confine

// fake returns s: only test builds (-tags failpoints) can pretend the
// kernel lacks a feature.
func fake(s Support) Support { return s }
