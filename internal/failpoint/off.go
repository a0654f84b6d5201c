//go:build !failpoints

package failpoint

import "context"

// Enabled reports whether this binary was built with the failpoints tag.
// It is a constant, so `if failpoint.Enabled { … }` compiles to nothing in
// a release build.
const Enabled = false

// Hit does nothing in a release build (and is never called: every call
// site is guarded by Enabled).
func Hit(context.Context, string, string) {}

// Flooding is false in a release build.
func Flooding() bool { return false }

// Armed is false in a release build (and is never called).
func Armed(context.Context, string, string) bool { return false }
