package runstate

import (
	"slices"
	"sync"

	"github.com/obversa/obversa/host/graph"
)

// retiredList is the lane targets proved dead so far. Attempt goroutines
// read it while the loop folds, so it has its own lock.
type retiredList struct {
	mu   sync.Mutex
	list []graph.RetiredTarget
}

func (r *retiredList) add(ts ...graph.RetiredTarget) {
	r.mu.Lock()
	r.list = append(r.list, ts...)
	r.mu.Unlock()
}

func (r *retiredList) snapshot() []graph.RetiredTarget {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}
