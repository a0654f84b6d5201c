package plugin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

func TestParseHandshakeLine(t *testing.T) {
	t.Parallel()
	cert := []byte{0x30, 0x82, 0x01, 0x02, 0xff}
	certField := base64.RawStdEncoding.EncodeToString(cert)
	tests := []struct {
		name, line string
		want       HandshakeLine
		wantErr    string
	}{
		{name: "go plugin with mTLS", line: "1|1|unix|/tmp/plugin1|grpc|" + certField + "\n",
			want: HandshakeLine{CoreVersion: 1, AppVersion: 1, Network: "unix", Address: "/tmp/plugin1", Protocol: "grpc", ServerCert: cert}},
		{name: "tcp without a certificate", line: "1|3|tcp|127.0.0.1:10001|grpc",
			want: HandshakeLine{CoreVersion: 1, AppVersion: 3, Network: "tcp", Address: "127.0.0.1:10001", Protocol: "grpc"}},
		{name: "empty certificate field", line: "1|1|unix|/s|grpc|",
			want: HandshakeLine{CoreVersion: 1, AppVersion: 1, Network: "unix", Address: "/s", Protocol: "grpc"}},
		{name: "multiplex field", line: "1|1|unix|/s|grpc||true",
			want: HandshakeLine{CoreVersion: 1, AppVersion: 1, Network: "unix", Address: "/s", Protocol: "grpc", Multiplex: true}},
		{name: "noise", line: "starting the engine…", wantErr: "has 1 fields"},
		{name: "too many fields", line: "1|1|unix|/s|grpc|x|true|8", wantErr: "has 8 fields"},
		{name: "core version", line: "2|1|unix|/s|grpc", wantErr: "core protocol version"},
		{name: "app version", line: "1|v1|unix|/s|grpc", wantErr: "application protocol version"},
		{name: "zero app version", line: "1|0|unix|/s|grpc", wantErr: "application protocol version"},
		{name: "network", line: "1|1|udp|/s|grpc", wantErr: "network"},
		{name: "address", line: "1|1|unix||grpc", wantErr: "empty address"},
		{name: "net/rpc", line: "1|1|unix|/s|netrpc", wantErr: "protocol"},
		{name: "padded certificate", line: "1|1|unix|/s|grpc|" + base64.StdEncoding.EncodeToString(cert), wantErr: "base64 without padding"},
		{name: "multiplex garbage", line: "1|1|unix|/s|grpc||maybe", wantErr: "multiplex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseHandshakeLine(tt.line)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want ErrHandshake mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// formatHandshake writes h as a handshake line.
func formatHandshake(h HandshakeLine) string {
	line := fmt.Sprintf("%d|%d|%s|%s|%s|%s", h.CoreVersion, h.AppVersion, h.Network, h.Address, h.Protocol,
		base64.RawStdEncoding.EncodeToString(h.ServerCert))
	if h.Multiplex {
		line += "|true"
	}
	return line
}

// FuzzParseHandshakeLine checks that any line is refused with ErrHandshake
// or parses to a value that survives a round trip.
func FuzzParseHandshakeLine(f *testing.F) {
	for _, s := range []string{"1|1|unix|/tmp/p|grpc|", "1|1|tcp|127.0.0.1:1|grpc|MIIB", "1|1|unix|/s|grpc||true", "noise", "", "1|1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHandshakeLine(line)
		if err != nil {
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("error %v does not wrap ErrHandshake", err)
			}
			return
		}
		if strings.ContainsAny(h.Address, "|\n") {
			return // not representable again; the parser accepted what it was given
		}
		again, err := ParseHandshakeLine(formatHandshake(h))
		if err != nil {
			t.Fatalf("re-parsing %q: %v", formatHandshake(h), err)
		}
		if diff := cmp.Diff(h, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

func TestHandshakeEnv(t *testing.T) {
	t.Parallel()
	got := HandshakeEnv([]int{1, 2}, []byte("PEM"))
	want := []string{
		Handshake.MagicCookieKey + "=" + Handshake.MagicCookieValue,
		"PLUGIN_MIN_PORT=10000", "PLUGIN_MAX_PORT=25000", "PLUGIN_PROTOCOL_VERSIONS=1,2", "PLUGIN_CLIENT_CERT=PEM",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if env := HandshakeEnv([]int{1}, nil); len(env) != 4 {
		t.Errorf("without a certificate: %q", env)
	}
}

func TestScenarioNames(t *testing.T) {
	t.Parallel()
	for _, k := range ScenarioKinds {
		if k == ScenarioFailure {
			continue
		}
		s, err := ParseScenario(string(k))
		if err != nil || s != (Scenario{Kind: k}) || s.String() != string(k) {
			t.Errorf("ParseScenario(%q) = %+v, %v", k, s, err)
		}
	}
	for _, fk := range FailureKinds {
		name := "failure:" + string(fk)
		s, err := ParseScenario(name)
		if err != nil || s != (Scenario{Kind: ScenarioFailure, Failure: fk}) || s.String() != name {
			t.Errorf("ParseScenario(%q) = %+v, %v", name, s, err)
		}
	}
	for _, bad := range []string{"", "failure", "failure:", "failure:nope", "delay:auth", "explode"} {
		if _, err := ParseScenario(bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseScenario(%q) = %v, want ErrInvalidRequest", bad, err)
		}
	}
}

func TestScenarioWire(t *testing.T) {
	t.Parallel()
	for _, s := range []Scenario{
		{Kind: ScenarioFailure, Failure: FailureRateLimit},
		{Kind: ScenarioDelay, Delay: 1500 * time.Millisecond},
		{Kind: ScenarioPanic},
	} {
		got, err := scenarioFromProto(scenarioToProto(s))
		if err != nil || got != s {
			t.Errorf("round trip of %+v = %+v, %v", s, got, err)
		}
	}
	for _, m := range []*pb.Scenario{
		{},
		{Kind: pb.ScenarioKind(99)},
		{Kind: pb.ScenarioKind_SCENARIO_KIND_FAILURE, FailureKind: pb.FailureKind(99)},
	} {
		if _, err := scenarioFromProto(m); err == nil {
			t.Errorf("scenarioFromProto(%v) accepted it", m)
		}
	}
}

// recordingEngine is an Engine whose Run does what its prompt says.
type recordingEngine struct {
	Engine
	runs int
}

func (e *recordingEngine) Run(ctx context.Context, req RunRequest, _ Emitter) (*RunResult, error) {
	e.runs++
	switch req.Prompt {
	case "panic":
		panic("boom")
	case "nil":
		return nil, nil
	case "fail":
		return nil, &Failure{Kind: FailureQuota, Message: "no credit"}
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &RunResult{Parts: []Part{{Kind: PartText, Text: "ok", Final: true}}}, nil
}

func TestServedEngine(t *testing.T) {
	t.Parallel()
	inner := &recordingEngine{}
	engine, conf, rec := serveEngineConfig(ServeConfig{Engine: inner, Conformance: nopConformance{}})
	if conf == nil || rec == nil {
		t.Fatal("an explicit Conformance is not served")
	}
	ctx := context.Background()
	run := func(id, prompt string, req RunRequest) (res *RunResult, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panic: %v", v)
			}
		}()
		req.AttemptID, req.Prompt = id, prompt
		return engine.Run(ctx, req, nil)
	}
	settled := func(id string) *pb.SettledResponse { return rec.wait(ctx, id, 0) }

	// A read request without tools never reaches the engine.
	_, err := run("read", "hello", RunRequest{WorkspaceMode: WorkspaceModeRead, Target: Identity{Provider: "p", Model: "m"}})
	var f *Failure
	if !errors.As(err, &f) || f.Kind != FailureInvalidConfig || f.Provider != "p" || inner.runs != 0 {
		t.Fatalf("read without tools: %v (runs %d), want invalid_config before the engine", err, inner.runs)
	}
	if _, err := run("read-tools", "hello", RunRequest{WorkspaceMode: WorkspaceModeRead, Tools: []string{"Read"}}); err != nil {
		t.Errorf("read with a tool: %v", err)
	}
	tests := []struct {
		id, prompt string
		want       func(*pb.RunMessage) bool
	}{
		{"ok", "hello", func(m *pb.RunMessage) bool { return len(m.GetResult().GetParts()) == 1 }},
		{"fail", "fail", func(m *pb.RunMessage) bool { return m.GetFailure().GetKind() == pb.FailureKind_FAILURE_KIND_QUOTA }},
		{"nil", "nil", func(m *pb.RunMessage) bool { return m.GetFailure().GetKind() == pb.FailureKind_FAILURE_KIND_UNKNOWN }},
		{"panic", "panic", func(m *pb.RunMessage) bool {
			return m.GetFailure().GetKind() == pb.FailureKind_FAILURE_KIND_UNKNOWN && strings.Contains(m.GetFailure().GetMessage(), "boom")
		}},
	}
	for _, tt := range tests {
		_, err := run(tt.id, tt.prompt, RunRequest{})
		if tt.prompt == "panic" && (err == nil || !strings.Contains(err.Error(), "boom")) {
			t.Errorf("the panic was not passed on to the server's recovery: %v", err)
		}
		got := settled(tt.id)
		if !got.GetStarted() || !got.GetSettled() || !tt.want(got.GetTerminal()) {
			t.Errorf("%s: settled %v", tt.id, got)
		}
	}
	if got := settled("never"); got.GetStarted() || got.GetSettled() {
		t.Errorf("an unknown attempt: %v", got)
	}

	// A Run in progress is started, not settled, until it returns.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = engine.Run(cctx, RunRequest{AttemptID: "wait", Prompt: "wait"}, nil)
	}()
	var got *pb.SettledResponse
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got = rec.wait(ctx, "wait", time.Millisecond); got.GetStarted() {
			break
		}
	}
	if !got.GetStarted() || got.GetSettled() {
		t.Fatalf("a running attempt: %v", got)
	}
	cancel()
	got = rec.wait(ctx, "wait", 5*time.Second)
	<-done
	if !got.GetSettled() || got.GetTerminal().GetFailure().GetKind() != pb.FailureKind_FAILURE_KIND_ABORTED {
		t.Errorf("a cancelled attempt settled as %v, want aborted", got)
	}
}

func TestServeEngineConfigDetectsConformance(t *testing.T) {
	t.Parallel()
	if _, conf, rec := serveEngineConfig(ServeConfig{Engine: &recordingEngine{}}); conf != nil || rec != nil {
		t.Error("an engine without Conformance got the service")
	}
	e := &conformingEngine{}
	if _, conf, rec := serveEngineConfig(ServeConfig{Engine: e}); conf != e || rec == nil {
		t.Error("an engine implementing Conformance did not get the service")
	}
	if engine, _, _ := serveEngineConfig(ServeConfig{Node: nil}); engine != nil {
		t.Error("no engine was turned into one")
	}
}

type nopConformance struct{}

func (nopConformance) Scenarios(context.Context) ([]ScenarioKind, error) { return nil, nil }
func (nopConformance) Arm(context.Context, string, Scenario) error       { return nil }
func (nopConformance) ModelCalls(context.Context) (int64, error)         { return 0, nil }

type conformingEngine struct {
	recordingEngine
	nopConformance
}

func TestSettleRecorderForgetsOldest(t *testing.T) {
	t.Parallel()
	rec := newSettleRecorder()
	for i := range maxSettledRecords + 10 {
		rec.begin(fmt.Sprint(i))(nil)
	}
	if n := len(rec.runs); n != maxSettledRecords {
		t.Errorf("%d records kept, want %d", n, maxSettledRecords)
	}
	if rec.wait(context.Background(), "0", 0).GetStarted() {
		t.Error("the oldest record was kept")
	}
	if !rec.wait(context.Background(), fmt.Sprint(maxSettledRecords+9), 0).GetSettled() {
		t.Error("the newest record was forgotten")
	}
}

func TestWireMessageKeepsWhatTheHostRejects(t *testing.T) {
	t.Parallel()
	m := &pb.RunMessage{Message: &pb.RunMessage_Result{Result: &pb.RunResult{Parts: []*pb.Part{
		{Kind: pb.PartKind_PART_KIND_TEXT, Text: "a", Final: true},
		{Kind: pb.PartKind_PART_KIND_TEXT, Text: "a", Final: true},
		{Kind: pb.PartKind(42), Json: []byte("{not json")},
	}}}}
	if _, err := decodeRunMessage(m); err == nil {
		t.Fatal("the host's decoder accepted two final parts")
	}
	got, err := wireMessageFromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	want := []Part{
		{Kind: PartText, Text: "a", Final: true},
		{Kind: PartText, Text: "a", Final: true},
		{Kind: "unknown(42)", JSON: json.RawMessage("{not json")},
	}
	if diff := cmp.Diff(want, got.Result.Parts); diff != "" || !got.Terminal() {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if empty, _ := wireMessageFromProto(&pb.RunMessage{}); !empty.Empty || empty.Terminal() {
		t.Errorf("an empty message decoded as %+v", empty)
	}
}

// FuzzWireMessageFromProto checks that any Run stream message decodes to
// at most one kind of value without panicking.
func FuzzWireMessageFromProto(f *testing.F) {
	runMessageSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m pb.RunMessage
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		w, err := wireMessageFromProto(&m)
		if err != nil {
			return
		}
		set := 0
		for _, ok := range []bool{w.Event != nil, w.Result != nil, w.Failure != nil, w.Empty} {
			if ok {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("decoded %d kinds of value from %v", set, &m)
		}
	})
}

// TestParseHandshakeLineCutsOnRunes: a refusal quotes a long line and a
// long field cut on a rune boundary and marked "…", so multibyte noise on
// a plugin's stdout is never quoted as broken \x escapes.
func TestParseHandshakeLineCutsOnRunes(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		strings.Repeat("日", 100),                             // 300 bytes of one field: cut at 200 falls inside a rune
		strings.Repeat("é", 40) + "|1|unix|/s|grpc",          // the core version field, 80 bytes, over its 64-byte echo
		"1|1|" + strings.Repeat("ü", 40) + "|/s|grpc",        // the network field
		"1|1|unix|/s|" + strings.Repeat("ß", 40) + "|" + "x", // the protocol field (then a bad certificate)
	} {
		_, err := ParseHandshakeLine(line)
		if !errors.Is(err, ErrHandshake) {
			t.Fatalf("ParseHandshakeLine(%.20q…): %v, want ErrHandshake", line, err)
		}
		msg := err.Error()
		if strings.Contains(msg, `\x`) || !utf8.ValidString(msg) {
			t.Errorf("refusal quotes a cut rune: %s", msg)
		}
		if !strings.Contains(msg, "…") {
			t.Errorf("refusal does not mark its cut: %s", msg)
		}
		if len(msg) > 400 {
			t.Errorf("refusal is %d bytes, want at most 400: %s", len(msg), msg)
		}
	}
}
