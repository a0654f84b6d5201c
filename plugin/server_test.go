package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// funcEngine is an Engine whose Run is a function; the other methods are
// not used by these tests.
type funcEngine struct {
	run func(context.Context, RunRequest, Emitter) (*RunResult, error)
}

func (funcEngine) Describe(context.Context) (*Description, error) { return &Description{}, nil }
func (funcEngine) Configure(context.Context, json.RawMessage) ([]Diagnostic, error) {
	return nil, nil
}
func (funcEngine) Admit(context.Context, AdmitRequest) (*AdmitResponse, error) {
	return &AdmitResponse{}, nil
}
func (e funcEngine) Run(ctx context.Context, req RunRequest, emit Emitter) (*RunResult, error) {
	return e.run(ctx, req, emit)
}

// serveInProcess serves e through the real server shim over an in-memory
// connection and returns the host-side shim.
func serveInProcess(t *testing.T, e Engine) Engine {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(grpc.ChainStreamInterceptor(recoverStream(hclog.NewNullLogger())))
	pb.RegisterEngineServer(s, &engineServer{impl: e, logger: hclog.NewNullLogger()})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &engineClient{remote: remote{name: "in-process"}, client: pb.NewEngineClient(conn)}
}

func finalText(s string) *RunResult {
	return &RunResult{Parts: []Part{{Kind: PartText, Text: s, Final: true}}}
}

func TestServerEmitConcurrently(t *testing.T) {
	t.Parallel()
	const writers, each = 8, 100
	e := serveInProcess(t, funcEngine{run: func(_ context.Context, _ RunRequest, emit Emitter) (*RunResult, error) {
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					_ = emit(RunEvent{Kind: EventText, Text: "x"})
				}
			}()
		}
		wg.Wait()
		return finalText("done"), nil
	}})
	n := 0
	if _, err := e.Run(context.Background(), RunRequest{}, func(RunEvent) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Errorf("received %d events, want %d", n, writers*each)
	}
}

func TestServerEmitAfterReturnFails(t *testing.T) {
	t.Parallel()
	late := make(chan Emitter, 1)
	e := serveInProcess(t, funcEngine{run: func(_ context.Context, _ RunRequest, emit Emitter) (*RunResult, error) {
		late <- emit
		return finalText("done"), nil
	}})
	if _, err := e.Run(context.Background(), RunRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := (<-late)(RunEvent{Kind: EventText, Text: "late"}); !errors.Is(err, errStreamClosed) {
		t.Errorf("emit after Run returned: %v, want errStreamClosed", err)
	}
}

func TestServerRejectsUnknownEventKind(t *testing.T) {
	t.Parallel()
	var emitErr error
	e := serveInProcess(t, funcEngine{run: func(_ context.Context, _ RunRequest, emit Emitter) (*RunResult, error) {
		emitErr = emit(RunEvent{Kind: "image"})
		return finalText("done"), nil
	}})
	if _, err := e.Run(context.Background(), RunRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if emitErr == nil {
		t.Error("emit of an unknown event kind succeeded")
	}
}

// TestServerInvalidUTF8: an engine whose streamed text and answer hold
// bytes that are not UTF-8 (a CLI printing Latin-1) reaches the host with
// each bad sequence replaced by U+FFFD, as encoding/json writes it, rather
// than failing to marshal, which the host saw as a call broken off.
func TestServerInvalidUTF8(t *testing.T) {
	t.Parallel()
	bad := "caf\xe9 \xff\xfe ok \xed\xa0\x80 é"
	want := "caf\uFFFD \uFFFD\uFFFD ok \uFFFD\uFFFD\uFFFD é"
	var fromJSON string // what the record would hold: encoding/json's replacement
	if b, err := json.Marshal(bad); err != nil || json.Unmarshal(b, &fromJSON) != nil || fromJSON != want {
		t.Fatalf("encoding/json writes %q as %q, the test expects %q", bad, fromJSON, want)
	}
	e := serveInProcess(t, funcEngine{run: func(_ context.Context, _ RunRequest, emit Emitter) (*RunResult, error) {
		if err := emit(RunEvent{Kind: EventText, Text: bad}); err != nil {
			return nil, err
		}
		if err := emit(RunEvent{Kind: EventToolUse, ToolName: "t\xff", ToolID: "1", ToolJSON: json.RawMessage(`{}`)}); err != nil {
			return nil, err
		}
		res := finalText(bad)
		res.StopReason = "end\xc3"
		return res, nil
	}})
	var events []RunEvent
	res, err := e.Run(context.Background(), RunRequest{Target: Identity{Adapter: "a", Provider: "p", Model: "m"}},
		func(ev RunEvent) error { events = append(events, ev); return nil })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if f, ok := res.Final(); !ok || f.Text != want || res.StopReason != "end\uFFFD" {
		t.Errorf("result %+v; want final text %q, stop reason %q", res, want, "end\uFFFD")
	}
	if len(events) != 2 || events[0].Text != want || events[1].ToolName != "t\uFFFD" {
		t.Errorf("events %+v; want text %q and tool t\uFFFD", events, want)
	}
}
