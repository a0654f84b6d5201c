package runstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"runtime/debug"
	"slices"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/snapcodec"
	"github.com/obversa/obversa/plugin"
)

// The fold snapshot (docs/architecture.md, "Fold snapshot"): the State
// folded up to a revision, saved so that a reader restores it and folds
// only the events after it. It is a cache derived from the record, never
// part of it. The file is a header line (JSON) and a payload (binary,
// host/snapcodec):
//
//	{"format":3,"fold":"…","rev":N,"digest":"sha256:…","bytes":N,"crc32c":N}\n
//	<payload>
//
// rev and digest name the record prefix the payload folds: the digest of
// the event at rev, which the record's hash chain ties to every event
// before it. fold names the code that folded it (FoldVersion and the
// binary's version-control revision). The payload holds the whole State,
// its start (the record's first event) included, so a reader reads no
// event up to rev but the one at rev, to check its digest.

// SnapshotFormat is the layout version of the fold snapshot file: 1 was
// a gob payload, 2 host/snapcodec's with the nodes' usage sorted by node,
// 3 with it in the order of their first engine call.
const SnapshotFormat = 3

// FoldVersion names the fold's semantics: it changes whenever a change to
// the fold (this package or host/graph) changes what a State holds after
// an event, so that a snapshot another fold wrote is ignored.
const FoldVersion = "13"

// SnapshotFile is the fold snapshot's file name in a run directory.
const SnapshotFile = "fold.snapshot"

var (
	// ErrSnapshotStale is returned (wrapped) for a snapshot written by
	// another fold or in another format: it is ignored, not damage.
	ErrSnapshotStale = errors.New("fold snapshot was written by another version of obversa")
	// ErrSnapshotInvalid is returned (wrapped) for a snapshot that is
	// damaged, does not belong to the record beside it, or does not match
	// a full fold of the record.
	ErrSnapshotInvalid = errors.New("fold snapshot is invalid")
	// ErrFolded is returned by EncodeSnapshot for a State that folded
	// events before they were recorded (State.Fold): only a fold of the
	// record itself may be saved.
	ErrFolded = errors.New("state folded unrecorded events")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// foldID is the fold field of a snapshot header written by this binary:
// FoldVersion, the main module's version, and the VCS revision the binary
// was built from (with "+true" when the work tree was modified), as far
// as the build recorded them.
var foldID = func() string {
	id := FoldVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		id += "+" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" && s.Value == "true" {
				id += "+" + s.Value
			}
		}
	}
	return id
}()

// snapshotHeader is the first line of a fold snapshot.
type snapshotHeader struct {
	Format int    `json:"format"`
	Fold   string `json:"fold"`
	Rev    int64  `json:"rev"`
	Digest string `json:"digest"` // the record's digest of the event at Rev
	Bytes  int    `json:"bytes"`  // payload length
	CRC    uint32 `json:"crc32c"` // of the payload
}

// resultNodes is a result's Output.Nodes, sorted by node: they are not
// small (one per node), so they are kept apart from the rest of the
// result (restSnap, JSON).
type resultNodes struct {
	Set   bool // Output.Nodes was not nil
	Nodes []nodeResult
}

type nodeResult struct {
	Node   string
	Result []byte
}

// splitNodes returns r without its output's node results, and those.
func splitNodes(r *Result) (*Result, resultNodes) {
	if r == nil || r.Output == nil || r.Output.Nodes == nil {
		return r, resultNodes{}
	}
	rn := resultNodes{Set: true, Nodes: make([]nodeResult, 0, len(r.Output.Nodes))}
	for _, k := range slices.Sorted(maps.Keys(r.Output.Nodes)) {
		rn.Nodes = append(rn.Nodes, nodeResult{k, r.Output.Nodes[k]})
	}
	c, o := *r, *r.Output
	o.Nodes = nil
	c.Output = &o
	return &c, rn
}

// joinNodes reads the node results splitNodes took out of r (written by
// resultNodes.encode) and puts them back into r, straight into its
// map: a finished run's result holds one per node.
func joinNodes(r *Result, rd *snapcodec.Reader) error {
	set, n := rd.Bool(), rd.Len()
	if !set {
		if n > 0 {
			return fmt.Errorf("%w: node results of no result", ErrSnapshotInvalid)
		}
		return nil
	}
	if r == nil || r.Output == nil {
		return fmt.Errorf("%w: node results without a result", ErrSnapshotInvalid)
	}
	r.Output.Nodes = make(map[string]json.RawMessage, n)
	for range n {
		k := rd.Str()
		r.Output.Nodes[k] = rd.Bytes()
	}
	return nil
}

func (rn resultNodes) encode(w *snapcodec.Writer) {
	w.Bool(rn.Set)
	w.Uint(uint64(len(rn.Nodes)))
	for _, n := range rn.Nodes {
		w.Str(n.Node)
		w.Bytes(n.Result)
	}
}

type restSnap struct {
	Retired    []graph.RetiredTarget         `json:"retired"`
	Finished   *Result                       `json:"finished"`
	FinishedAt time.Time                     `json:"finished_at"`
	Paused     *Result                       `json:"paused"`
	Worker     *Worker                       `json:"worker"`
	Exit       *Exit                         `json:"exit"`
	PrevExit   *Exit                         `json:"prev_exit,omitempty"`
	Stop       *Exit                         `json:"stop,omitempty"`
	PrevStop   *Exit                         `json:"prev_stop,omitempty"`
	Workers    int                           `json:"workers"`
	LastAt     time.Time                     `json:"last_at"`
	Phase      Phase                         `json:"phase"`
	Cleanup    *bool                         `json:"cleanup"`
	Anchor     *SnapshotData                 `json:"anchor"`
	Requests   map[string]graph.ApprovalData `json:"requests"`
	Takeovers  int                           `json:"takeovers"`
	Crashes    int                           `json:"crashes"`
	Deaths     int                           `json:"plugin_deaths,omitempty"`
	Totals     RunUsage                      `json:"totals"`
	Preflight  preflightSnap                 `json:"preflight"`
}

type preflightSnap struct {
	Enabled   bool                        `json:"enabled"`
	Probes    map[string]ProbeStartedData `json:"probes"`
	Open      []string                    `json:"open"`
	Finished  int                         `json:"finished"`
	Pauses    int                         `json:"pauses"`
	Pause     string                      `json:"pause"`
	Reason    string                      `json:"reason"`
	LastPause string                      `json:"last_pause"`
	Admitted  *PreflightAdmittedData      `json:"admitted"`
	Failed    *PreflightFailedData        `json:"failed"`
	Selection map[string]*plugin.Identity `json:"selection"`
	Receipts  map[string]receiptSnap      `json:"receipts"`
	LiveSeen  bool                        `json:"live_seen"`
	Usage     plugin.Usage                `json:"usage"`
}

type receiptSnap struct {
	Probe     string           `json:"probe"`
	Selection *plugin.Identity `json:"selection"`
}

// EncodeSnapshot returns the fold snapshot of s: the header line and the
// payload. Errors: ErrNotStarted before the first event, ErrFolded for a
// State that folded unrecorded events, and encoding errors.
func (s *State) EncodeSnapshot() ([]byte, error) {
	if s.start == nil || s.rev == 0 {
		return nil, ErrNotStarted
	}
	if s.folded {
		return nil, ErrFolded
	}
	payload, err := s.encodePayload()
	if err != nil {
		return nil, err
	}
	h, err := json.Marshal(snapshotHeader{Format: SnapshotFormat, Fold: foldID, Rev: s.rev, Digest: s.digest,
		Bytes: len(payload), CRC: crc32.Checksum(payload, castagnoli)})
	if err != nil {
		return nil, err
	}
	return slices.Concat(h, []byte("\n"), payload), nil
}

// encodePayload returns s's payload (host/snapcodec): the start, the
// small rest as JSON, the results' node results, the sequences and
// positions (maps as sorted lists, so a State always encodes to the same
// bytes), the nodes' usage in the order of their first call, then the
// graph's part.
func (s *State) encodePayload() ([]byte, error) {
	r := s.rest()
	var finished, paused resultNodes
	r.Finished, finished = splitNodes(r.Finished)
	r.Paused, paused = splitNodes(r.Paused)
	rest, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	s.loadPositions()
	w := snapcodec.NewWriter(64 * len(s.pos))
	if err := encodeStart(w, s.start); err != nil {
		return nil, err
	}
	w.Str(s.startDigest)
	w.Bytes(rest)
	finished.encode(w)
	paused.encode(w)
	s.encodePositions(w)
	w.Uint(uint64(len(s.order)))
	for _, n := range s.order {
		w.Str(n.node)
		writeUsage(w, *n.u)
	}
	if err := s.graph.EncodeSnapshot(w); err != nil {
		return nil, err
	}
	return w.Finish()
}

func (s *State) rest() restSnap {
	p := s.pf
	ps := preflightSnap{Enabled: p.enabled, Probes: p.probes, Open: p.open, Finished: p.finished, Pauses: p.pauses,
		Pause: p.pause, Reason: p.reason, LastPause: p.lastPause, Admitted: p.admitted, Failed: p.failed,
		Selection: p.selection, Receipts: map[string]receiptSnap{}, LiveSeen: p.liveSeen, Usage: p.usage}
	for k, r := range p.receipts {
		ps.Receipts[k] = receiptSnap{Probe: r.probe, Selection: r.selection}
	}
	return restSnap{Retired: s.retired.snapshot(), Finished: s.finished, FinishedAt: s.finishedAt, Paused: s.paused,
		Worker: s.worker, Exit: s.exit, PrevExit: s.prevExit, Stop: s.stop, PrevStop: s.prevStop, Workers: s.workers, LastAt: s.lastAt, Phase: s.phase, Cleanup: s.cleanup, Anchor: s.anchor, Requests: s.requests,
		Takeovers: s.takeovers, Crashes: s.crashes, Deaths: s.deaths, Totals: s.totals, Preflight: ps}
}

// parseSnapshot splits a snapshot file into its header and payload and
// checks the format, the fold and the checksum. Errors wrap
// ErrSnapshotStale or ErrSnapshotInvalid.
func parseSnapshot(b []byte) (snapshotHeader, []byte, error) {
	var h snapshotHeader
	line, payload, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return h, nil, fmt.Errorf("%w: no header line", ErrSnapshotInvalid)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, nil, fmt.Errorf("%w: header: %w", ErrSnapshotInvalid, err)
	}
	switch {
	case h.Format != SnapshotFormat:
		return h, nil, fmt.Errorf("%w (format %d, this one reads %d)", ErrSnapshotStale, h.Format, SnapshotFormat)
	case h.Fold != foldID:
		return h, nil, fmt.Errorf("%w (fold %q, this one is %q)", ErrSnapshotStale, h.Fold, foldID)
	case h.Rev < 1:
		return h, nil, fmt.Errorf("%w: rev %d", ErrSnapshotInvalid, h.Rev)
	case h.Bytes != len(payload):
		return h, nil, fmt.Errorf("%w: %d payload bytes, the header says %d", ErrSnapshotInvalid, len(payload), h.Bytes)
	case crc32.Checksum(payload, castagnoli) != h.CRC:
		return h, nil, fmt.Errorf("%w: the payload's checksum does not match", ErrSnapshotInvalid)
	}
	return h, payload, nil
}

// restorePayload fills s, a New State, from a snapshot payload, which
// is transient when its bytes go away after (nothing of s refers to
// them then). The
// start's definition is not validated again: the fold that saved it
// checked the very event (the record's hash chain ties it to the
// snapshot's digest), and checking a large definition costs more than the
// rest of a restore. Errors wrap ErrSnapshotInvalid (and the decoder's
// error: snapcodec.ErrCorrupt, graph.ErrSnapshot, a JSON error).
func (s *State) restorePayload(payload []byte, transient bool) error {
	r, err := snapcodec.NewReader(payload)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	rs, err := decodeStart(r)
	if err != nil {
		return err
	}
	s.start, s.pf, s.phase = rs, NewPreflightFold(rs.Plan.Preflight), PhaseStarting
	// The graph's shape needs only the definition: it is set up while the
	// parts before the graph's are read.
	shaping := graph.Prepare(rs.Definition)
	s.startDigest = r.Str()
	var rest restSnap
	if err := json.Unmarshal(r.Bytes(), &rest); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	for _, res := range []*Result{rest.Finished, rest.Paused} {
		if err := res.check(); res != nil && err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
		}
	}
	if err := joinNodes(rest.Finished, r); err != nil {
		return err
	}
	if err := joinNodes(rest.Paused, r); err != nil {
		return err
	}
	// The positions and sequences are checked now and built when first
	// needed (deferPositions).
	if err := s.deferPositions(r, transient); err != nil {
		return err
	}
	n := r.Len()
	s.usage = make(map[string]*plugin.Usage, n)
	us := make([]plugin.Usage, n)
	if n > 0 {
		s.order = make([]nodeTotal, n)
	}
	for i := range us {
		k := r.Str()
		us[i] = readUsage(r)
		s.order[i] = nodeTotal{k, &us[i]}
		if s.usage[k] = &us[i]; len(s.usage) != i+1 {
			return fmt.Errorf("%w: node %q has two usage totals", ErrSnapshotInvalid, k)
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	if s.graph, err = shaping.Restore(r); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	s.retired.list = rest.Retired
	s.finished, s.finishedAt, s.paused, s.worker, s.exit = rest.Finished, rest.FinishedAt, rest.Paused, rest.Worker, rest.Exit
	s.prevExit, s.stop, s.prevStop, s.lastAt = rest.PrevExit, rest.Stop, rest.PrevStop, rest.LastAt
	s.phase, s.cleanup, s.anchor, s.takeovers, s.crashes = rest.Phase, rest.Cleanup, rest.Anchor, rest.Takeovers, rest.Crashes
	s.deaths, s.workers = rest.Deaths, rest.Workers
	if rest.Requests != nil {
		s.requests = rest.Requests
	}
	if rest.Totals.Lanes != nil {
		s.totals = rest.Totals
	}
	return s.restorePreflight(rest.Preflight)
}

func (s *State) restorePreflight(ps preflightSnap) error {
	p := s.pf
	if ps.Enabled != p.enabled {
		return fmt.Errorf("%w: preflight enabled %v, the plan says %v", ErrSnapshotInvalid, ps.Enabled, p.enabled)
	}
	p.open, p.finished, p.pauses, p.pause, p.reason = ps.Open, ps.Finished, ps.Pauses, ps.Pause, ps.Reason
	p.lastPause, p.admitted, p.failed, p.liveSeen, p.usage = ps.LastPause, ps.Admitted, ps.Failed, ps.LiveSeen, ps.Usage
	if ps.Probes != nil {
		p.probes = ps.Probes
	}
	if ps.Selection != nil {
		p.selection = ps.Selection
	}
	for k, r := range ps.Receipts {
		p.receipts[k] = receipt{probe: r.Probe, selection: r.Selection}
	}
	return nil
}
