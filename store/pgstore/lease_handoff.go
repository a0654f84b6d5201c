package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/obversa/obversa/store"
)

// LeaseEnv names the environment variable through which an owner hands
// its lease to a child process (Lease.Handoff):
// "<schema>/<namespace>/<run>/<epoch>/<lease id>". Run.Adopt reads it and
// unsets it, so that it does not reach the child's own children.
const LeaseEnv = "OBVERSA_PG_LEASE"

// Adopt takes over the lease a parent handed to this process in LeaseEnv
// (Lease.Handoff): it must name this run, and the run's lease must still
// be that one (epoch and id) and held. The child renews it too, so the
// lease lives while either process does, as a file lock shared by a
// parent and child does. LeaseEnv is unset. Errors: store.ErrNotOwner
// (nothing handed over, another run's lease) or a *FencedError (the lease
// was taken over or released since), store.ErrClosed, store.ErrReadOnly.
func (r *Run) Adopt(ctx context.Context) (store.Ownership, error) {
	if err := r.writable(ctx); err != nil {
		return nil, err
	}
	h, err := parseHandoff(os.Getenv(LeaseEnv))
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: %v", store.ErrNotOwner, r.label, err)
	}
	if h.schema != r.b.cfg.Schema || h.namespace != r.b.ns || h.run != r.id {
		return nil, fmt.Errorf("%w: run %s: the lease handed over in %s is for run %s/%s of schema %s", store.ErrNotOwner, r.label, LeaseEnv, h.namespace, h.run, h.schema)
	}
	cur, err := r.Lease(ctx)
	if err != nil {
		return nil, err
	}
	if cur.Epoch != h.epoch || cur.ID != h.id || !cur.Held {
		return nil, &FencedError{Run: r.label, Epoch: h.epoch, Current: cur}
	}
	os.Unsetenv(LeaseEnv)
	return r.hold(cur.Holder, h.epoch, h.id, true)
}

// handoff is a lease handed to a child: what LeaseEnv holds.
type handoff struct {
	schema, namespace, run string
	epoch                  int64
	id                     string // the lease id, a UUID
}

// String is the LeaseEnv value.
func (h handoff) String() string {
	return fmt.Sprintf("%s/%s/%s/%d/%s", h.schema, h.namespace, h.run, h.epoch, h.id)
}

// parseHandoff reads a LeaseEnv value. The error says what is wrong
// without repeating the value's lease id.
func parseHandoff(v string) (handoff, error) {
	if v == "" {
		return handoff{}, fmt.Errorf("no lease was handed to this process (%s is not set)", LeaseEnv)
	}
	p := strings.Split(v, "/")
	if len(p) != 5 {
		return handoff{}, fmt.Errorf("%s is not <schema>/<namespace>/<run>/<epoch>/<lease id>", LeaseEnv)
	}
	h := handoff{schema: p[0], namespace: p[1], run: p[2], id: p[4]}
	epoch, err := strconv.ParseInt(p[3], 10, 64)
	if err != nil || epoch < 1 {
		return handoff{}, fmt.Errorf("%s has no valid epoch (a positive integer)", LeaseEnv)
	}
	h.epoch = epoch
	if !schemaRE().MatchString(h.schema) || store.ValidID(h.namespace) != nil || store.ValidID(h.run) != nil {
		return handoff{}, fmt.Errorf("%s does not name a schema, namespace and run", LeaseEnv)
	}
	if _, err := uuid.Parse(h.id); err != nil {
		return handoff{}, fmt.Errorf("%s has no valid lease id (a UUID)", LeaseEnv)
	}
	return h, nil
}

// Handoff returns LeaseEnv=<schema>/<namespace>/<run>/<epoch>/<lease id>
// and no files: put the entry in the child's environment and the child's
// Run.Adopt takes the lease over. After Release it returns nothing.
func (l *Lease) Handoff() ([]string, []*os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil, nil
	}
	b := l.r.b
	h := handoff{schema: b.cfg.Schema, namespace: b.ns, run: l.r.id, epoch: l.epoch, id: l.id} // l.mu is held
	return []string{LeaseEnv + "=" + h.String()}, nil
}
