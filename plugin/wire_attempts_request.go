package plugin

import (
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// The requests of an Attempts stream in their wire form: the host writes
// each AttemptRequest once, by hand, which also gives the size checked
// against the limit (protobuf sized it three times: for the check, for
// gRPC's buffer and while encoding), and a Go plugin reads it by hand into
// the generated messages, leaving any form protobuf's encoder does not
// write to proto.Unmarshal. FuzzAttemptRequestWire holds both to protobuf.

// appendRunAttempt appends the AttemptRequest that starts call id with m.
// m's strings are UTF-8 (runRequestToProto refuses any other).
func appendRunAttempt(b []byte, id uint64, m *pb.RunRequest) []byte {
	b = appendVarint(b, 1, id)
	return appendNested(b, 2, func(b []byte) []byte {
		b = appendVarint(b, 1, uint64(int64(m.GetPurpose())))
		b = appendString(b, 2, m.GetRunId())
		b = appendString(b, 3, m.GetNodeId())
		b = appendString(b, 4, m.GetPosition())
		b = appendString(b, 5, m.GetAttemptId())
		if t := m.GetTarget(); t != nil {
			b = appendNested(b, 6, func(b []byte) []byte {
				b = appendString(b, 1, t.GetAdapter())
				b = appendString(b, 2, t.GetProvider())
				b = appendString(b, 3, t.GetModelFamily())
				b = appendString(b, 4, t.GetModel())
				return appendRepeatedString(b, 5, t.GetTools())
			})
		}
		b = appendString(b, 7, m.GetPrompt())
		b = appendBytes(b, 8, m.GetOutputSchema())
		b = appendRepeatedString(b, 9, m.GetTools())
		b = appendString(b, 10, m.GetWorkspaceDir())
		b = appendString(b, 11, m.GetWorkspaceMode())
		return appendVarint(b, 12, uint64(m.GetTimeoutMs()))
	})
}

// appendCancelAttempt appends the AttemptRequest that cancels call id.
func appendCancelAttempt(b []byte, id uint64) []byte {
	b = appendVarint(b, 1, id)
	return appendNested(b, 3, func(b []byte) []byte { return b })
}

// appendRepeatedString appends each of ss as field num, empty ones too.
func appendRepeatedString(b []byte, num protowire.Number, ss []string) []byte {
	for _, s := range ss {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

// decodeAttemptRequest decodes b, the wire form of one AttemptRequest.
// The error is the status gRPC gives a message it cannot unmarshal.
func decodeAttemptRequest(b []byte) (*pb.AttemptRequest, error) {
	if m, ok := readAttemptRequest(b); ok {
		return m, nil
	}
	m := &pb.AttemptRequest{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return m, nil
}

// readAttemptRequest reads b as an AttemptRequest; false when b is not in
// the form the direct reader takes.
func readAttemptRequest(b []byte) (*pb.AttemptRequest, bool) {
	m := &pb.AttemptRequest{}
	r := wireReader{b: b}
	for r.next() {
		switch r.num {
		case 1:
			m.Call = r.varint(math.MaxUint64)
		case 2, 3:
			if m.Request != nil {
				return nil, false // both of the oneof: the last wins, the slow way decides
			}
			v := r.bytes()
			if r.num == 3 {
				if len(v) != 0 {
					return nil, false
				}
				m.Request = &pb.AttemptRequest_Cancel{Cancel: &pb.AttemptRequest_CancelCall{}}
				continue
			}
			run, ok := readRunRequest(v)
			if !ok {
				return nil, false
			}
			m.Request = &pb.AttemptRequest_Run{Run: run}
		default:
			return nil, false
		}
	}
	return m, !r.bad
}

func readRunRequest(b []byte) (*pb.RunRequest, bool) {
	m := &pb.RunRequest{}
	r := wireReader{b: b, repeats: 1 << 9} // tools repeat
	for r.next() {
		switch r.num {
		case 1:
			m.Purpose = pb.Purpose(r.varint(math.MaxInt32))
		case 2:
			m.RunId = r.str()
		case 3:
			m.NodeId = r.str()
		case 4:
			m.Position = r.str()
		case 5:
			m.AttemptId = r.str()
		case 6:
			id, ok := readIdentity(r.bytes())
			if !ok {
				return nil, false
			}
			m.Target = &pb.Identity{Adapter: id.Adapter, Provider: id.Provider, ModelFamily: id.ModelFamily, Model: id.Model, Tools: id.Tools}
		case 7:
			m.Prompt = r.str()
		case 8:
			m.OutputSchema = append([]byte{}, r.bytes()...)
		case 9:
			m.Tools = append(m.Tools, r.str())
		case 10:
			m.WorkspaceDir = r.str()
		case 11:
			m.WorkspaceMode = r.str()
		case 12:
			m.TimeoutMs = int64(r.varint(math.MaxUint64))
		default:
			return nil, false
		}
	}
	return m, !r.bad
}
