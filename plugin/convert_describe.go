package plugin

import (
	"math"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

var typeWire = map[Type]pb.PluginType{
	TypeEngine: pb.PluginType_PLUGIN_TYPE_ENGINE,
	TypeNode:   pb.PluginType_PLUGIN_TYPE_NODE,
	TypePolicy: pb.PluginType_PLUGIN_TYPE_POLICY,
}

var typeGo = invert(typeWire)

var severityWire = map[Severity]pb.Severity{
	SeverityError:   pb.Severity_SEVERITY_ERROR,
	SeverityWarning: pb.Severity_SEVERITY_WARNING,
}

func descriptionToProto(d *Description) *pb.DescribeResponse {
	m := &pb.DescribeResponse{
		Name:    d.Name,
		Version: d.Version,
		Capabilities: &pb.Capabilities{
			Admit:            d.Capabilities.Admit,
			StructuredOutput: d.Capabilities.StructuredOutput,
			Tools:            d.Capabilities.Tools,
			MaxConcurrency:   uint32(min(max(int64(d.Capabilities.MaxConcurrency), 0), math.MaxUint32)),
		},
	}
	for _, t := range d.Types {
		if w, ok := typeWire[t]; ok {
			m.Types = append(m.Types, w)
		}
	}
	for _, k := range d.FailureKinds {
		if w, ok := failureKindWire[k]; ok {
			m.FailureKinds = append(m.FailureKinds, w)
		}
	}
	return m
}

// descriptionFromProto decodes m, dropping plugin types and failure kinds
// this host does not know.
func descriptionFromProto(m *pb.DescribeResponse) *Description {
	d := &Description{
		Name:    m.GetName(),
		Version: m.GetVersion(),
		Capabilities: Capabilities{
			Admit:            m.GetCapabilities().GetAdmit(),
			StructuredOutput: m.GetCapabilities().GetStructuredOutput(),
			Tools:            m.GetCapabilities().GetTools(),
			MaxConcurrency:   int(min(m.GetCapabilities().GetMaxConcurrency(), math.MaxInt32)),
		},
	}
	for _, w := range m.GetTypes() {
		if t, ok := typeGo[w]; ok {
			d.Types = append(d.Types, t)
		}
	}
	for _, w := range m.GetFailureKinds() {
		if k, ok := failureKindGo[w]; ok {
			d.FailureKinds = append(d.FailureKinds, k)
		}
	}
	return d
}

func diagnosticsToProto(ds []Diagnostic) *pb.ConfigureResponse {
	m := &pb.ConfigureResponse{Diagnostics: make([]*pb.Diagnostic, 0, len(ds))}
	for _, d := range ds {
		sev, ok := severityWire[d.Severity]
		if !ok {
			sev = pb.Severity_SEVERITY_ERROR
		}
		m.Diagnostics = append(m.Diagnostics, &pb.Diagnostic{
			Severity:  sev,
			Summary:   d.Summary,
			Detail:    d.Detail,
			Attribute: d.Attribute,
		})
	}
	return m
}

// diagnosticsFromProto decodes m; any severity other than WARNING is an
// error, so that an unknown severity refuses the run rather than passing.
func diagnosticsFromProto(m *pb.ConfigureResponse) []Diagnostic {
	var ds []Diagnostic
	for _, d := range m.GetDiagnostics() {
		sev := SeverityError
		if d.GetSeverity() == pb.Severity_SEVERITY_WARNING {
			sev = SeverityWarning
		}
		ds = append(ds, Diagnostic{
			Severity:  sev,
			Summary:   d.GetSummary(),
			Detail:    d.GetDetail(),
			Attribute: d.GetAttribute(),
		})
	}
	return ds
}
