// Package calc has two bugs for fix-until-green to fix, one per round.
package calc

// Add returns a plus b.
func Add(a, b int) int { return a - b }

// Mul returns a times b.
func Mul(a, b int) int { return a + b }
