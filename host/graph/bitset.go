package graph

import "math/bits"

// bitSet is a set of indexes in [0, n) — vertices, or a for_each node's
// instances — read in ascending order. Beside a bit per index it keeps a
// summary bit per 64-index word that has any set, so next skips an empty
// stretch 4 096 indexes at a time: reading the first few members of a set
// over a graph of 100 000 vertices looks at a few dozen words, not the
// whole set.
type bitSet struct {
	words   []uint64
	summary []uint64
}

func newBitSet(n int) bitSet {
	w := (n + 63) / 64
	return bitSet{words: make([]uint64, w), summary: make([]uint64, (w+63)/64)}
}

// set adds i to the set when on, removes it otherwise.
func (b *bitSet) set(i int, on bool) {
	w, bit := i/64, uint64(1)<<(i%64)
	if on {
		b.words[w] |= bit
		b.summary[w/64] |= 1 << (w % 64)
		return
	}
	b.words[w] &^= bit
	if b.words[w] == 0 {
		b.summary[w/64] &^= 1 << (w % 64)
	}
}

// next returns the smallest member ≥ i, or -1 when there is none.
func (b *bitSet) next(i int) int {
	if i < 0 {
		i = 0
	}
	w := i / 64
	if w >= len(b.words) {
		return -1
	}
	if m := b.words[w] &^ (1<<(i%64) - 1); m != 0 {
		return w*64 + bits.TrailingZeros64(m)
	}
	// The next word with a member, from the summary.
	w++
	for s := w / 64; s < len(b.summary); s++ {
		m := b.summary[s]
		if s == w/64 {
			m &^= 1<<(w%64) - 1
		}
		if m != 0 {
			w = s*64 + bits.TrailingZeros64(m)
			return w*64 + bits.TrailingZeros64(b.words[w])
		}
	}
	return -1
}

// empty reports whether the set has no member: no summary bit is set
// (one word per 4 096 indexes).
func (b *bitSet) empty() bool {
	for _, m := range b.summary {
		if m != 0 {
			return false
		}
	}
	return true
}
