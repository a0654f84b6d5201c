package plugin

import (
	"math"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// The direct readers of an Attempts stream's results: a RunResult with its
// parts, usage and engine identity, and a Failure (see
// wire_attempts_decode.go).

// readUsage reads a Usage as usageFromProto decodes it; counts above
// MaxUsageCount, which usageFromProto refuses, are left to it.
func readUsage(b []byte) (Usage, bool) {
	r := wireReader{b: b}
	var u Usage
	if !r.next() {
		return u, !r.bad
	}
	v := r.bytes()
	if r.bad || len(r.b) != 0 {
		return Usage{}, false
	}
	switch r.num {
	case 1: // unknown: an empty message
		return u, len(v) == 0
	case 2:
	default:
		return Usage{}, false
	}
	r = wireReader{b: v}
	u.Known = true
	for r.next() {
		n := int64(r.varint(MaxUsageCount))
		switch r.num {
		case 1:
			u.Input = n
		case 2:
			u.Output = n
		case 3:
			u.CacheRead = n
		case 4:
			u.CacheCreation = n
		default:
			return Usage{}, false
		}
	}
	return u, !r.bad
}

// readRunResult reads a RunResult as decodeResult decodes it; a part of a
// kind this host does not know is left to it.
func readRunResult(b []byte) (*RunResult, bool) {
	r := wireReader{b: b, repeats: 1 << 1} // parts repeat
	res := &RunResult{Parts: make([]Part, 0, 1)}
	var ok bool
	for r.next() {
		switch r.num {
		case 1:
			var p Part
			if p, ok = readPart(r.bytes()); !ok {
				return nil, false
			}
			res.Parts = append(res.Parts, p)
		case 2:
			if res.Usage, ok = readUsage(r.bytes()); !ok {
				return nil, false
			}
		case 3:
			if res.Requested, ok = readIdentity(r.bytes()); !ok {
				return nil, false
			}
		case 4:
			if res.Effective, ok = readIdentity(r.bytes()); !ok {
				return nil, false
			}
		case 5:
			res.StopReason = r.str()
		default:
			return nil, false
		}
	}
	return res, !r.bad
}

func readPart(b []byte) (Part, bool) {
	r := wireReader{b: b}
	var p Part
	kind := pb.PartKind_PART_KIND_UNSPECIFIED
	for r.next() {
		switch r.num {
		case 1:
			kind = pb.PartKind(r.varint(math.MaxInt32))
		case 2:
			p.Text = r.str()
		case 3:
			p.JSON = rawJSON(cloneBytes(r.bytes()))
		case 4:
			p.ToolName = r.str()
		case 5:
			p.ToolID = r.str()
		case 6:
			p.Final = r.varint(1) == 1
		default:
			return Part{}, false
		}
	}
	k, ok := partKindGo[kind]
	p.Kind = k
	return p, ok && !r.bad
}

func readIdentity(b []byte) (Identity, bool) {
	r := wireReader{b: b, repeats: 1 << 5} // tools repeat
	var id Identity
	for r.next() {
		switch r.num {
		case 1:
			id.Adapter = r.str()
		case 2:
			id.Provider = r.str()
		case 3:
			id.ModelFamily = r.str()
		case 4:
			id.Model = r.str()
		case 5:
			id.Tools = append(id.Tools, r.str())
		default:
			return Identity{}, false
		}
	}
	return id, !r.bad
}

// readFailure reads a Failure as failureFromProto decodes it.
func readFailure(b []byte) (*Failure, bool) {
	r := wireReader{b: b}
	kind := pb.FailureKind_FAILURE_KIND_UNSPECIFIED
	f := &Failure{}
	for r.next() {
		switch r.num {
		case 1:
			kind = pb.FailureKind(r.varint(math.MaxInt32))
		case 2:
			f.Message = r.str()
		case 3:
			f.RetryAfter = msToDuration(int64(r.varint(math.MaxUint64)))
		case 4:
			f.Provider = r.str()
		case 5:
			f.Model = r.str()
		default:
			return nil, false
		}
	}
	if k, ok := failureKindGo[kind]; ok {
		f.Kind = k
	} else {
		f.Kind = FailureUnknown
	}
	return f, !r.bad
}
