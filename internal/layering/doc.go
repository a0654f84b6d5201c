// Package layering holds the test that keeps the direction of imports of
// DESIGN §1 true; it has no code of its own.
package layering
