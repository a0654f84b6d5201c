// Package testutil holds small helpers shared by tests in several packages.
// It is a leaf: it imports nothing of ours, and only tests import it.
package testutil
