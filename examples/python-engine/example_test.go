// Package pythonengine_test runs the example graph on the Python engine,
// checks the engine with the conformance kit, and checks what its launcher
// pins.
package pythonengine_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

// python is the interpreter the launcher is built with: Debian's, which
// sees Debian's python3-grpcio, python3-grpc-tools and python3-protobuf (a
// python3 earlier on PATH, such as a pyenv one, usually does not).
const python = "/usr/bin/python3"

// py is the Python engine's setting: usable when python can import the
// Debian packages; CI sets OBVERSA_REQUIRE_PYTHON_ENGINE after installing
// them.
var py = exampletest.Example{Name: "python-engine", Runtime: exampletest.Runtime{RequireEnv: "OBVERSA_REQUIRE_PYTHON_ENGINE"}}

func TestMain(m *testing.M) {
	os.Exit(exampletest.Main(m, &py, func() string {
		out, err := exec.Command(python, "-c", "import grpc, grpc_tools, google.protobuf").CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s cannot import grpc, grpc_tools and google.protobuf (%v: %s); "+
				"install them with apt-get install -y python3-grpcio python3-grpc-tools python3-protobuf",
				python, err, strings.TrimSpace(string(out)))
		}
		return ""
	}, func() *exec.Cmd {
		return exec.Command(python, filepath.Join(py.PluginDir, "build.py"), py.Launcher())
	}))
}

func launcher() string { return py.Launcher() }

func TestConformance(t *testing.T) {
	py.Need(t)
	rep := conformance.Run(t, launcher(), conformance.Options{})
	for _, r := range rep.Results {
		// The example serves Run alone, not the optional attempt stream:
		// run.attempts is skipped as UNIMPLEMENTED, and the host falls back.
		if r.Status != conformance.Skip || r.Case == "run.attempts" && strings.Contains(r.Seen, "UNIMPLEMENTED") {
			continue
		}
		t.Errorf("%s skipped (%s); the Python engine serves every scenario", r.Case, r.Seen)
	}
}

// TestPythonUnitTests runs the engine's own tests (unittest, in
// examples/plugins/python-engine/tests): configuration, rate limits, keys,
// cancellation, and stdout forwarded through GRPCStdio.
func TestPythonUnitTests(t *testing.T) {
	py.Need(t)
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests")
	cmd.Dir = py.PluginDir
	cmd.Env = append(os.Environ(), "PYTHONPATH=src:build/gen")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("python -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestRunGraph runs run.hcl with the real obversa binary: preflight retires
// the provider whose key is missing (auth) and the lane goes on with its
// fallback; the optional node over the model's rate limit fails rate_limit
// and the run completes.
func TestRunGraph(t *testing.T) {
	py.Need(t)
	obversa := py.Obversa()
	res := exampletest.RunExample(t, obversa, "run.hcl", "../../bin/python-engine", launcher())
	if res.Kind != "complete" {
		t.Fatalf("result %+v, stderr:\n%s", res, res.Stderr)
	}
	for _, node := range []string{"draft", "title", "report"} {
		if got := res.Output.Nodes[node]; !strings.HasPrefix(got, "[python] python answer to: ") {
			t.Errorf("node %s answered %q", node, got)
		}
	}
	if got, ok := res.Output.Nodes["tagline"]; ok {
		t.Errorf("tagline answered %q; it is over echo-mini's rate limit", got)
	}
	events := readEvents(t, filepath.Join(res.Dir, "events.jsonl"))
	var retired, limited bool
	for _, e := range events {
		switch {
		case e.Type == "graph:model-unavailable" && e.Data["failure_kind"] == "auth":
			retired = strings.Contains(fmt.Sprint(e.Data["retired"]), "provider:hosted")
		case e.Type == "graph:node-failed" && e.Data["node"] == "tagline":
			msg, _ := e.Data["message"].(string)
			limited = e.Data["failure_kind"] == "rate_limit" && strings.Contains(msg, "retry after")
		}
	}
	if !retired {
		t.Error("no graph:model-unavailable retiring provider hosted for an auth failure")
	}
	if !limited {
		t.Error("tagline did not fail rate_limit with a retry-after")
	}
	if code, stdout, stderr := exampletest.Obversa(t, obversa, ".", "verify", res.Dir); code != 0 || !strings.HasPrefix(stdout, "ok: ") {
		t.Errorf("verify: exit %d: %s %s", code, stdout, stderr)
	}
}

// TestRunRefusesBadConfig checks that a mistake in the plugin's config
// refuses the run before it starts, with the engine's diagnostic naming the
// attribute.
func TestRunRefusesBadConfig(t *testing.T) {
	py.Need(t)
	obversa := py.Obversa()
	typo := func(s string) string {
		return strings.Replace(s, "rate_limits   = {", "rate_limit    = {", 1)
	}
	runFile := exampletest.PrepareExample(t, obversa, "run.hcl", "../../bin/python-engine", launcher(), typo)
	code, stdout, stderr := exampletest.Obversa(t, obversa, filepath.Dir(runFile), "run", runFile)
	for _, want := range []string{`unknown python engine setting "rate_limit"`, "config.rate_limit"} {
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("run with a typo in config: exit %d, stdout %q, stderr %q; want a refusal with %q", code, stdout, stderr, want)
		}
	}
}

type event struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	return out
}

// TestTypedFailures checks the failures the engine reports through the
// host's own client: typed in a unary call's status details (Admit) and as
// a Run's terminal message, and bad configuration as diagnostics naming the
// attribute.
func TestTypedFailures(t *testing.T) {
	py.Need(t)
	c, err := exampletest.Launch("python", launcher(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	diags, err := e.Configure(ctx, json.RawMessage(`{"api_keys": {"hosted": "HOSTED_API_KEY"}, "rate_limits": {"mini": 1}}`))
	if err != nil || len(diags) != 0 {
		t.Fatalf("Configure: %v %v", diags, err)
	}
	hosted := plugin.Identity{Adapter: "python", Provider: "hosted", Model: "m"}
	mini := plugin.Identity{Adapter: "python", Provider: "local", Model: "mini"}
	tests := []struct {
		name string
		call func() error
		kind plugin.FailureKind
		// minRetry and maxRetry bound the back-off hint: (min, max], or none
		// when maxRetry is 0.
		minRetry, maxRetry time.Duration
	}{
		{"Admit of a provider without its key", func() error {
			_, err := e.Admit(ctx, plugin.AdmitRequest{Target: hosted})
			return err
		}, plugin.FailureAuth, 0, 0},
		{"Admit of a target without a model", func() error {
			_, err := e.Admit(ctx, plugin.AdmitRequest{Target: plugin.Identity{Adapter: "python", Provider: "local"}})
			return err
		}, plugin.FailureInvalidConfig, 0, 0},
		{"Run of a provider without its key", func() error {
			_, err := e.Run(ctx, plugin.RunRequest{Target: hosted, Prompt: "hi"}, nil)
			return err
		}, plugin.FailureAuth, 0, 0},
		{"Run over the rate limit", func() error {
			if _, err := e.Run(ctx, plugin.RunRequest{Target: mini, Prompt: "one"}, nil); err != nil {
				return fmt.Errorf("the first Run failed: %w", err)
			}
			_, err := e.Run(ctx, plugin.RunRequest{Target: mini, Prompt: "two"}, nil)
			return err
		}, plugin.FailureRateLimit, 50 * time.Second, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var f *plugin.Failure
			if !errors.As(err, &f) || f.Kind != tt.kind {
				t.Fatalf("got %v (%#v), want a %s failure", err, f, tt.kind)
			}
			if tt.maxRetry == 0 && f.RetryAfter != 0 || tt.maxRetry > 0 && (f.RetryAfter <= tt.minRetry || f.RetryAfter > tt.maxRetry) {
				t.Errorf("retry after %v, want in (%v, %v]", f.RetryAfter, tt.minRetry, tt.maxRetry)
			}
		})
	}

	bad := []struct{ config, attribute string }{
		{`{"answer_prefx": "x"}`, "answer_prefx"},
		{`{"rate_limits": {"mini": 0}}`, "rate_limits.mini"},
		{`{"api_keys": {"hosted": 7}}`, "api_keys.hosted"},
		{`["not", "an object"]`, ""},
	}
	for _, b := range bad {
		diags, err := e.Configure(ctx, json.RawMessage(b.config))
		if err != nil || len(diags) != 1 || diags[0].Severity != plugin.SeverityError || diags[0].Attribute != b.attribute {
			t.Errorf("Configure(%s) = %+v, %v; want one error naming %q", b.config, diags, err, b.attribute)
		}
	}
}

// TestLauncherRefusesChangedCode checks what the pin covers: the plugin's
// sources, the generated protocol code and the Debian packages it imports.
func TestLauncherRefusesChangedCode(t *testing.T) {
	py.Need(t)
	zeros := strings.Repeat("0", 64)
	exampletest.CheckRefusals(t, launcher(), []exampletest.Refusal{
		{Name: "changed source", Entry: `"src/pyengine/engine.py": "[0-9a-f]{64}"`, Replacement: `"src/pyengine/engine.py": "` + zeros + `"`, Want: "engine.py changed after this launcher was built"},
		{Name: "unlisted source", Entry: `"src/pyengine/engine.py": "[0-9a-f]{64}",?`, Replacement: ``, Want: "is not one of the files this launcher was built with"},
		{Name: "changed generated code", Entry: `"build/gen/obversa/plugin/v1/plugin_pb2.py": "[0-9a-f]{64}"`, Replacement: `"build/gen/obversa/plugin/v1/plugin_pb2.py": "` + zeros + `"`, Want: "plugin_pb2.py changed"},
		{Name: "changed dependency", Entry: `("[^"]*/grpc/__init__.py"): "[0-9a-f]{64}"`, Replacement: `$1: "` + zeros + `"`, Want: "grpc/__init__.py changed"},
		{Name: "changed native module", Entry: `("[^"]*/grpc/_cython/cygrpc[^"]*\.so"): "[0-9a-f]{64}"`, Replacement: `$1: "` + zeros + `"`, Want: ".so changed"},
	})
}

// TestLauncherIgnoresPythonEnvironment checks that Python's own variables,
// which could load code before the launcher runs, are ignored (-I): a
// PYTHONPATH directory with modules named like the standard library's that
// the launcher imports first (hashlib, json), or a sitecustomize.
func TestLauncherIgnoresPythonEnvironment(t *testing.T) {
	py.Need(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	code := fmt.Sprintf("open(%q, 'w').write('ran')\n", marker)
	for _, name := range []string{"hashlib.py", "json.py", "sitecustomize.py", "usercustomize.py", "startup.py"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs testutil.SyncBuffer
	c, err := exampletest.Launch("python", launcher(), &logs,
		"PYTHONPATH="+dir, "PYTHONSTARTUP="+filepath.Join(dir, "startup.py"), "PYTHONUSERBASE="+dir)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, logs.String())
	}
	c.Close()
	if _, err := os.Stat(marker); err == nil {
		t.Error("code named by PYTHON* variables ran in the plugin")
	}
}

// TestCertificateSignature checks the certificate the plugin makes for
// automatic mTLS beyond what the host verifies: a valid self-signature,
// localhost, and usable as its own CA (go-plugin's host pins it as the root).
func TestCertificateSignature(t *testing.T) {
	py.Need(t)
	hostCert := clientCertificate(t)
	cmd := exec.Command(launcher())
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		plugin.Handshake.MagicCookieKey + "=" + plugin.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_CLIENT_CERT=" + string(hostCert),
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the handshake line: %v", err)
	}
	fields := strings.Split(strings.TrimSpace(line), "|")
	if len(fields) != 6 {
		t.Fatalf("handshake line %q", line)
	}
	der, err := base64.RawStdEncoding.DecodeString(fields[5])
	if err != nil {
		t.Fatalf("certificate field: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Errorf("self-signature: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err != nil {
		t.Errorf("verifying as the host does: %v", err)
	}
}

// clientCertificate returns a PEM certificate like the one go-plugin's host
// sends in PLUGIN_CLIENT_CERT.
func clientCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
