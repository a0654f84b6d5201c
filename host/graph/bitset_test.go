package graph

import (
	"math/rand/v2"
	"testing"
)

// TestBitSet holds next to a scan of a plain membership slice over sets
// that span several summary words, as members come and go.
func TestBitSet(t *testing.T) {
	const n = 3*4096 + 70
	r := rand.New(rand.NewPCG(1, 2))
	b := newBitSet(n)
	in := make([]bool, n)
	edges := []int{0, 1, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, n - 1}
	for round := range 400 {
		i := r.IntN(n)
		if round%3 == 0 {
			i = edges[r.IntN(len(edges))]
		}
		on := r.IntN(3) != 0
		b.set(i, on)
		in[i] = on
		count := 0
		for _, m := range in {
			if m {
				count++
			}
		}
		if b.empty() != (count == 0) {
			t.Fatalf("round %d: empty() = %v with %d members", round, b.empty(), count)
		}
		for _, from := range append([]int{-1, r.IntN(n), n, n + 100}, edges...) {
			want := -1
			for j := max(from, 0); j < n; j++ {
				if in[j] {
					want = j
					break
				}
			}
			if got := b.next(from); got != want {
				t.Fatalf("round %d: next(%d) = %d, want %d", round, from, got, want)
			}
		}
	}
}
