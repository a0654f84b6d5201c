package plugin

import (
	"errors"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

func admitResponseToProto(r *AdmitResponse) *pb.AdmitResponse {
	if !r.Supported {
		return &pb.AdmitResponse{Outcome: &pb.AdmitResponse_Unsupported_{
			Unsupported: &pb.AdmitResponse_Unsupported{Reason: r.Reason},
		}}
	}
	return &pb.AdmitResponse{Outcome: &pb.AdmitResponse_Selection_{
		Selection: &pb.AdmitResponse_Selection{Identity: identityToProto(r.Selection)},
	}}
}

func admitResponseFromProto(m *pb.AdmitResponse) (*AdmitResponse, error) {
	switch o := m.GetOutcome().(type) {
	case *pb.AdmitResponse_Selection_:
		return &AdmitResponse{Supported: true, Selection: identityFromProto(o.Selection.GetIdentity())}, nil
	case *pb.AdmitResponse_Unsupported_:
		return &AdmitResponse{Reason: o.Unsupported.GetReason()}, nil
	default:
		return nil, errors.New("admit response has neither selection nor unsupported")
	}
}
