package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// The broken-plugin zoo: each mode is the mock engine broken in exactly one
// way, as plugins in the wild are. zoo_test.go checks what the kit and
// `obversa run` make of each.

// What the zoo's plugins say when they give up.
const (
	exitMessage       = "zoo: no API key: set ZOO_API_KEY in the plugin block's env"
	floodMessage      = "zoo: giving up: the model server refused 3 connections"
	grandchildMessage = "zoo: the indexer child failed to start"
	strayStdoutLine   = "zoo: progress 50%"
	resultFirstText   = "zoo: the result came first"
	noiseLine         = "starting the engine…"
)

// zooPlugin serves the zoo's plugin for mode; ok is false for a mode that
// is not the zoo's.
func zooPlugin(mode string) (code int, ok bool) {
	var err error
	switch mode {
	case "stdout-noise":
		fmt.Println(noiseLine)
		err = sdk.ServeEngine(enginetest.New())
	case "long-line":
		requireCookie()
		fmt.Println(strings.Repeat("x", 100<<10))
		err = sdk.ServeEngine(enginetest.New())
	case "slow-handshake":
		requireCookie()
		time.Sleep(15 * time.Second)
		err = sdk.ServeEngine(enginetest.New())
	case "wrong-version":
		// A plugin built for protocol version 2, which no host speaks yet.
		requireCookie()
		fmt.Println("1|2|unix|/nonexistent/plugin.sock|grpc|")
		time.Sleep(30 * time.Second)
	case "exit-at-start":
		fmt.Fprintln(os.Stderr, exitMessage)
		return 1, true
	case "stderr-flood":
		return stderrFlood(), true
	case "grandchild":
		return startGrandchild(), true
	case "grandchild-sleeper":
		time.Sleep(10 * time.Second)
		return 0, true
	case "stdout-after":
		err = sdk.ServeEngine(&strayStdout{enginetest.New()})
	case "result-first":
		encoding.RegisterCodecV2(resultFirstCodec{encoding.GetCodecV2("proto")})
		err = sdk.ServeEngine(&resultFirst{Engine: enginetest.New(), armed: map[string]bool{}})
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	return 0, true
}

// requireCookie refuses to start without the host's magic cookie, as
// sdk.Serve does, for the modes that misbehave before they call it.
func requireCookie() {
	if os.Getenv(plugin.Handshake.MagicCookieKey) != plugin.Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "zoo: this is a plugin; the Obversa host starts it")
		os.Exit(1)
	}
}

// stderrFlood writes 8 MiB of log lines to stderr, then why it gives up,
// and exits 1.
func stderrFlood() int {
	var b bytes.Buffer
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, "zoo: retrying connection %d to the model server\n", i)
	}
	_, _ = os.Stderr.Write(b.Bytes())
	fmt.Fprintln(os.Stderr, floodMessage)
	return 1
}

// zooMarkEnv marks the processes of one zoo test, so that the test can
// find what its plugins left running.
const zooMarkEnv = "OBVERSA_ZOO_MARK"

// startGrandchild starts a child in a session of its own that holds this
// process's stdout and stderr, then exits 1 with a message, as a plugin
// whose helper daemon outlives it. The child's environment holds its mode
// and the zoo's mark only: none of the host's launch marker.
func startGrandchild() int {
	requireCookie()
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	cmd := exec.Command(self)
	cmd.Env = []string{modeEnv + "=grandchild-sleeper", zooMarkEnv + "=" + os.Getenv(zooMarkEnv)}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 1
	}
	fmt.Fprintln(os.Stderr, grandchildMessage)
	return 1
}

// strayStdout writes a progress line to its real stdout in every Run, as a
// child process that inherits it would.
type strayStdout struct{ *enginetest.Engine }

func (e *strayStdout) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	_, _ = syscall.Write(1, []byte(strayStdoutLine+"\n"))
	return e.Engine.Run(ctx, req, emit)
}

// resultFirst streams a marker event before the mock engine's own events
// in an ordinary Run (no scenario, no output schema); resultFirstCodec
// sends a result in its place, so that the stream carries a result before
// any event and the events and the real result after it.
type resultFirst struct {
	*enginetest.Engine
	mu    sync.Mutex
	armed map[string]bool // attempts with a scenario
}

func (e *resultFirst) Arm(ctx context.Context, id string, s plugin.Scenario) error {
	e.mu.Lock()
	e.armed[id] = true
	e.mu.Unlock()
	return e.Engine.Arm(ctx, id, s)
}

// resultFirstMarker is the text of the event the codec replaces.
const resultFirstMarker = "zoo-result-first-marker"

func (e *resultFirst) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	e.mu.Lock()
	armed := e.armed[req.AttemptID]
	e.mu.Unlock()
	if armed || len(req.OutputSchema) > 0 {
		return e.Engine.Run(ctx, req, emit)
	}
	if err := emit(plugin.RunEvent{Kind: plugin.EventText, Text: resultFirstMarker}); err != nil {
		return nil, err
	}
	return e.Engine.Run(ctx, req, emit)
}

// resultFirstCodec is gRPC's proto codec, except that a RunMessage
// holding resultFirstMarker is sent as a RunMessage with a result instead,
// on a Run stream and inside an Attempts stream's AttemptMessages alike.
type resultFirstCodec struct{ encoding.CodecV2 }

func (c resultFirstCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(proto.Message); ok {
		switch m.ProtoReflect().Descriptor().Name() {
		case "RunMessage":
			if hasMarker(m) {
				v = textResult(m.ProtoReflect())
			}
		case "AttemptMessages":
			v = replaceMarked(m)
		case "Empty":
			// A Go plugin hands gRPC its Run stream messages and
			// AttemptMessages in their wire form, as the unknown fields
			// of an empty message (plugin/wire_attempts_encode.go).
			if raw := m.ProtoReflect().GetUnknown(); bytes.Contains(raw, []byte(resultFirstMarker)) {
				v = replaceRaw(raw)
			}
		}
	}
	return c.CodecV2.Marshal(v)
}

func hasMarker(m proto.Message) bool {
	b, err := proto.Marshal(m)
	return err == nil && bytes.Contains(b, []byte(resultFirstMarker))
}

// replaceMarked returns a copy of an AttemptMessages whose marked
// RunMessages are results.
func replaceMarked(m proto.Message) proto.Message {
	out := proto.Clone(m).ProtoReflect()
	list := out.Get(out.Descriptor().Fields().ByName("messages")).List()
	for i := range list.Len() {
		am := list.Get(i).Message()
		fd := am.Descriptor().Fields().ByName("message")
		if rm := am.Get(fd).Message(); rm.IsValid() && hasMarker(rm.Interface()) {
			am.Set(fd, protoreflect.ValueOfMessage(textResult(rm).ProtoReflect()))
		}
	}
	return out.Interface()
}

// replaceRaw returns raw, the wire form of an AttemptMessages or of a
// RunMessage holding resultFirstMarker, with the marked RunMessages as
// results.
func replaceRaw(raw []byte) proto.Message {
	batch := newMessage("obversa.plugin.v1.AttemptMessages")
	if proto.Unmarshal(raw, batch) == nil && isBatch(batch.ProtoReflect()) {
		return replaceMarked(batch)
	}
	run := newMessage("obversa.plugin.v1.RunMessage")
	_ = proto.Unmarshal(raw, run)
	return textResult(run.ProtoReflect())
}

// newMessage is a new message of the registered type name.
func newMessage(name protoreflect.FullName) proto.Message {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		panic(err)
	}
	return mt.New().Interface()
}

// isBatch reports whether m, decoded as an AttemptMessages, is one: a
// RunMessage decoded so has its fields as unknown ones and no call ids.
func isBatch(m protoreflect.Message) bool {
	list := m.Get(m.Descriptor().Fields().ByName("messages")).List()
	for i := range list.Len() {
		am := list.Get(i).Message()
		if am.Get(am.Descriptor().Fields().ByName("call")).Uint() == 0 || len(am.GetUnknown()) > 0 {
			return false
		}
	}
	return list.Len() > 0
}

// textResult is a RunMessage of msg's type with a result: one final text
// part, usage unknown.
func textResult(msg protoreflect.Message) proto.Message {
	m := msg.Type().New()
	res := m.Mutable(m.Descriptor().Fields().ByName("result")).Message()
	parts := res.Mutable(res.Descriptor().Fields().ByName("parts")).List()
	part := parts.NewElement()
	pf := part.Message().Descriptor().Fields()
	kind := pf.ByName("kind").Enum().Values().ByName("PART_KIND_TEXT").Number()
	part.Message().Set(pf.ByName("kind"), protoreflect.ValueOfEnum(kind))
	part.Message().Set(pf.ByName("text"), protoreflect.ValueOfString(resultFirstText))
	part.Message().Set(pf.ByName("final"), protoreflect.ValueOfBool(true))
	parts.Append(part)
	usage := res.Mutable(res.Descriptor().Fields().ByName("usage")).Message()
	usage.Mutable(usage.Descriptor().Fields().ByName("unknown"))
	return m.Interface()
}
