// Package layering holds the test that keeps the direction of imports of
// docs/architecture.md#packages-and-imports true; it has no code of its own.
package layering
