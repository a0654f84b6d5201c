package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"google.golang.org/grpc"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// Describe and Configure are the same call on both plugin types
// (docs/writing-plugins.md); the Engine and NodeBinding shims delegate both halves to the helpers
// here.

// describer is what Describe and Configure need of a generated client: both
// pb.EngineClient and pb.NodeBindingClient have it.
type describer interface {
	Describe(ctx context.Context, in *pb.DescribeRequest, opts ...grpc.CallOption) (*pb.DescribeResponse, error)
	Configure(ctx context.Context, in *pb.ConfigureRequest, opts ...grpc.CallOption) (*pb.ConfigureResponse, error)
}

// describe calls Describe on client (host side).
func (r *remote) describe(ctx context.Context, client describer) (*Description, error) {
	cctx, cancel := r.join(ctx)
	defer cancel()
	resp, err := client.Describe(cctx, &pb.DescribeRequest{})
	if err != nil {
		return nil, r.callError(ctx, "Describe", err)
	}
	return descriptionFromProto(resp), nil
}

// configure calls Configure on client with config (host side).
func (r *remote) configure(ctx context.Context, client describer, config json.RawMessage) ([]Diagnostic, error) {
	cctx, cancel := r.join(ctx)
	defer cancel()
	resp, err := client.Configure(cctx, &pb.ConfigureRequest{ConfigJson: config})
	if err != nil {
		return nil, r.callError(ctx, "Configure", err)
	}
	return diagnosticsFromProto(resp), nil
}

// Describer is the half every plugin type answers the same way: Engine,
// NodeBinding and Policy all embed it.
type Describer interface {
	// Describe returns the plugin's name, version and what it serves (an
	// engine's capabilities).
	Describe(ctx context.Context) (*Description, error)
	// Configure receives the run file's `config` as JSON (nil when absent)
	// and returns diagnostics; an error-severity diagnostic refuses the run.
	Configure(ctx context.Context, config json.RawMessage) ([]Diagnostic, error)
}

// Describer returns the launched plugin's Describe and Configure, whatever
// type it was launched as.
func (c *Client) Describer() Describer {
	switch {
	case c.engine != nil:
		return c.engine
	case c.node != nil:
		return c.node
	default:
		return c.policy
	}
}

// serveDescribe answers Describe from impl (plugin side). An error travels
// as a Failure detail, and so does a nil Description (wrapping
// errNilAnswer).
func serveDescribe(ctx context.Context, impl Describer) (*pb.DescribeResponse, error) {
	d, err := impl.Describe(ctx)
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	if d == nil {
		return nil, failureStatus(errorToFailure(fmt.Errorf("Describe: %w", errNilAnswer)))
	}
	return descriptionToProto(d), nil
}

// serveConfigure answers Configure from impl (plugin side); an error
// travels as a Failure detail.
func serveConfigure(ctx context.Context, impl Describer, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	ds, err := impl.Configure(ctx, rawJSON(req.GetConfigJson()))
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	return diagnosticsToProto(ds), nil
}

// describedName is the grammar of the name a plugin gives in Describe: the
// id grammar of a run file's plugin label (docs/architecture.md#the-record).
var describedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// DescribedNameGrammar is describedName's grammar in words, for messages.
const DescribedNameGrammar = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"

// ValidDescribedName reports whether name, as a plugin gives it in
// Describe, follows DescribedNameGrammar; the host and the conformance kit
// both check it with this rule. A signed plugin's name follows the
// stricter ValidPluginName, without '.'.
func ValidDescribedName(name string) bool { return describedName().MatchString(name) }
