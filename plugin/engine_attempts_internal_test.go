package plugin

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// methodCounter counts the streams opened per gRPC method.
type methodCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounter) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	m.mu.Lock()
	m.n[info.FullMethod]++
	m.mu.Unlock()
	return handler(srv, ss)
}

func (m *methodCounter) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// countedInProcess serves srv in process and counts the streams opened.
func countedInProcess(t *testing.T, srv pb.EngineServer) (*engineClient, *methodCounter) {
	t.Helper()
	counter := &methodCounter{n: map[string]int{}}
	conn := bufconnServe(t, srv, grpc.ChainStreamInterceptor(counter.intercept))
	return &engineClient{remote: remote{name: "counted"}, client: pb.NewEngineClient(conn)}, counter
}

// TestRunSharesOneAttemptsStream makes many calls, some at once: they all
// travel on one Attempts stream and none opens a Run stream.
func TestRunSharesOneAttemptsStream(t *testing.T) {
	t.Parallel()
	c, counter := countedInProcess(t, &engineServer{impl: funcEngine{run: func(_ context.Context, req RunRequest, emit Emitter) (*RunResult, error) {
		for range 3 {
			if err := emit(RunEvent{Kind: EventText, Text: req.Prompt}); err != nil {
				return nil, err
			}
		}
		return finalText(req.Prompt), nil
	}}, logger: hclog.NewNullLogger()})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			prompt := string(rune('a' + i))
			events := 0
			res, err := c.Run(context.Background(), RunRequest{Prompt: prompt}, func(ev RunEvent) error {
				if ev.Text != prompt {
					t.Errorf("call %q got the event of call %q", prompt, ev.Text)
				}
				events++
				return nil
			})
			if err != nil {
				t.Errorf("call %q: %v", prompt, err)
				return
			}
			if f, _ := res.Final(); f.Text != prompt || events != 3 {
				t.Errorf("call %q: final %q after %d events, want its own and 3", prompt, f.Text, events)
			}
		})
	}
	wg.Wait()
	if n := counter.count(pb.Engine_Attempts_FullMethodName); n != 1 {
		t.Errorf("Attempts streams opened: %d, want 1", n)
	}
	if n := counter.count(pb.Engine_Run_FullMethodName); n != 0 {
		t.Errorf("Run streams opened: %d, want 0", n)
	}
}

// TestRunFallsBackWithoutAttempts serves a plugin that does not know the
// Attempts RPC (as one built before it): every call is a Run stream, and
// the host asks for the Attempts stream once only.
func TestRunFallsBackWithoutAttempts(t *testing.T) {
	t.Parallel()
	c, counter := countedInProcess(t, &scriptedEngine{msgs: []*pb.RunMessage{text("a"), {Message: &pb.RunMessage_Result{Result: resultToProto(finalText("done"))}}}})
	for range 3 {
		events := 0
		res, err := c.Run(context.Background(), RunRequest{}, func(RunEvent) error { events++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := res.Final(); f.Text != "done" || events != 1 {
			t.Fatalf("final %q after %d events, want \"done\" after 1", f.Text, events)
		}
	}
	if n := counter.count(pb.Engine_Attempts_FullMethodName); n != 1 {
		t.Errorf("Attempts asked for %d times, want once", n)
	}
	if n := counter.count(pb.Engine_Run_FullMethodName); n != 3 {
		t.Errorf("Run streams opened: %d, want 3", n)
	}
	if served, err := ServesAttempts(context.Background(), c); served || err != nil {
		t.Errorf("ServesAttempts = %v, %v; want false", served, err)
	}
}

// limitedStream is the Send side of an Attempts stream as gRPC's server
// keeps it: a message over MaxMessageBytes is refused with
// RESOURCE_EXHAUSTED and ends the stream, so every later Send fails.
type limitedStream struct {
	pb.Engine_AttemptsServer
	sent  []*pb.AttemptMessages
	ended error
}

func (s *limitedStream) SendMsg(v any) error {
	if s.ended != nil {
		return s.ended
	}
	m := v.(proto.Message)
	if n := proto.Size(m); n > MaxMessageBytes {
		s.ended = status.Errorf(codes.ResourceExhausted, "trying to send message larger than max (%d vs. %d)", n, MaxMessageBytes)
		return s.ended
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	var sent pb.AttemptMessages
	if err := proto.Unmarshal(b, &sent); err != nil {
		return err
	}
	s.sent = append(s.sent, &sent)
	return nil
}

// TestSendBatchKeepsTheStream: a batch of calls' messages larger than the
// limit together goes out in parts that fit, and a single message over
// the limit ends its own call with RESOURCE_EXHAUSTED; no Send is over
// the limit, which would end the stream and every call on it.
func TestSendBatchKeepsTheStream(t *testing.T) {
	t.Parallel()
	text := func(call uint64, n int) queuedMessage {
		msg, err := attemptEvent(call, RunEvent{Kind: EventText, Text: strings.Repeat("x", n)})
		if err != nil {
			t.Fatal(err)
		}
		return queuedMessage{call, msg}
	}
	batch := []queuedMessage{text(1, 30<<20), text(2, 30<<20), text(3, 70<<20), text(4, 10), text(5, 40<<20)}
	s := &limitedStream{}
	o := newAttemptSender(s, func() {})
	if err := o.sendBatch(batch); err != nil {
		t.Fatalf("sendBatch = %v", err)
	}
	var calls []uint64
	for _, m := range s.sent {
		for _, am := range m.GetMessages() {
			calls = append(calls, am.GetCall())
			if want := am.GetCall() == 3; (am.GetStatusCode() == uint32(codes.ResourceExhausted)) != want {
				t.Errorf("call %d: status %d %q; want RESOURCE_EXHAUSTED only for the oversize message", am.GetCall(), am.GetStatusCode(), am.GetStatusMessage())
			}
		}
	}
	if diff := cmp.Diff([]uint64{1, 2, 3, 4, 5}, calls); diff != "" {
		t.Errorf("calls sent (-want +got):\n%s", diff)
	}
	if len(s.sent) != 2 {
		t.Errorf("%d Sends, want 2 (1 and 2; 3's end, 4 and 5)", len(s.sent))
	}
}
