package conformance

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/plugin"
)

// Cases about the process: the handshake, the graceful stop and the host's
// death.

// DefaultHandshakeTimeout bounds the wait for a handshake line when
// Options.HandshakeTimeout is 0: the host's own default bound
// (plugin.DefaultStartTimeout), which a run file's plugin block changes
// with start_timeout.
const DefaultHandshakeTimeout = plugin.DefaultStartTimeout

// futureVersion is a protocol version no plugin speaks yet.
const futureVersion = 1000

// describeStderr quotes the end of a raw launch's stderr, where a plugin
// that gives up says why.
func describeStderr(p *rawProcess) string {
	s := strings.TrimSpace(p.stderr.String())
	if s == "" {
		return "stderr empty"
	}
	return "stderr ends with: " + quoteTail(s, 300)
}

// quoteTail quotes the last n bytes of s, from a line start when one is
// near.
func quoteTail(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < n/2 {
			s = s[i+1:]
		}
		s = "…" + s
	}
	return strconv.Quote(s)
}

// readHandshake starts the plugin with the given offered versions and
// returns its parsed first line. The process is left running for the
// caller to stop.
func (k *kit) readHandshake(versions []int) (*rawProcess, plugin.HandshakeLine, error) {
	hs, err := handshakeEnv(versions)
	if err != nil {
		return nil, plugin.HandshakeLine{}, err
	}
	p, err := rawStart(k.bin, k.opts.Args, k.env, hs, true)
	if err != nil {
		return nil, plugin.HandshakeLine{}, err
	}
	h, err := p.handshake(k.opts.handshakeTimeout())
	return p, h, err
}

// handshake reads and parses the first stdout line, waiting up to d. A
// process that exits first is reported as such at once, even when a child
// of it still holds stdout open.
func (p *rawProcess) handshake(d time.Duration) (plugin.HandshakeLine, error) {
	line, err := p.firstLineOrExit(d)
	switch {
	case errors.Is(err, errExited) || errors.Is(err, io.EOF) && line == "":
		if !p.wait(2 * time.Second) {
			return plugin.HandshakeLine{}, fmt.Errorf("closed its stdout before its handshake and kept running; %s", describeStderr(p))
		}
		return plugin.HandshakeLine{}, fmt.Errorf("exited before its handshake (%s); %s", p.exitDescription(), describeStderr(p))
	case err != nil && !errors.Is(err, io.EOF):
		return plugin.HandshakeLine{}, fmt.Errorf("%v; %s", err, describeStderr(p))
	}
	h, err := plugin.ParseHandshakeLine(line)
	if err != nil {
		return plugin.HandshakeLine{}, fmt.Errorf("first stdout line is not the handshake line: %v", err)
	}
	return h, nil
}

func caseHandshakeLine(ctx context.Context, k *kit) verdict {
	p, h, err := k.readHandshake([]int{plugin.ProtocolVersion})
	if err != nil {
		if p != nil {
			_ = p.stop()
		}
		return fail("%v", err)
	}
	_ = p.stop()
	if h.AppVersion != plugin.ProtocolVersion {
		return fail("handshake names protocol version %d, the only one offered was %d", h.AppVersion, plugin.ProtocolVersion)
	}
	if h.ServerCert == nil {
		return fail("the host offered mTLS (PLUGIN_CLIENT_CERT) but the handshake line has no server certificate: %d|%d|%s|%s|%s",
			h.CoreVersion, h.AppVersion, h.Network, h.Address, h.Protocol)
	}
	cert, err := x509.ParseCertificate(h.ServerCert)
	if err != nil {
		return fail("the handshake's server certificate is not an X.509 certificate: %v", err)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		return fail("the handshake's server certificate is not valid for localhost, the name the host verifies: %v", err)
	}
	seen := fmt.Sprintf("%d|%d|%s|%s|%s|<certificate for localhost, %d bytes>", h.CoreVersion, h.AppVersion, h.Network, h.Address, h.Protocol, len(h.ServerCert))
	// The host's own launch: go-plugin's handshake, mTLS, dispensing.
	s, err := k.launch(ctx)
	if err != nil {
		return fail("%s; but the host's launch failed: %v", seen, err)
	}
	defer s.close()
	if _, err := s.describe(ctx); err != nil {
		return fail("%s; the host launched it but Describe failed: %v", seen, err)
	}
	return pass("%s; the host's launch and a Describe call over mTLS work", seen)
}

func caseHandshakeCookie(_ context.Context, k *kit) verdict {
	hs, err := handshakeEnv([]int{plugin.ProtocolVersion})
	if err != nil {
		return fail("%v", err)
	}
	for i, kv := range hs {
		if strings.HasPrefix(kv, plugin.Handshake.MagicCookieKey+"=") {
			hs[i] = plugin.Handshake.MagicCookieKey + "=not-the-obversa-cookie"
		}
	}
	p, err := rawStart(k.bin, k.opts.Args, k.env, hs, true)
	if err != nil {
		return fail("%v", err)
	}
	// Whatever it started before exiting is stopped with it.
	defer func() { _ = p.stop() }()
	start := time.Now()
	exited := p.wait(5 * time.Second)
	if !exited {
		line, _ := p.firstLine(time.Millisecond)
		if _, err := plugin.ParseHandshakeLine(line); err == nil {
			return fail("started anyway and printed a handshake line: %q", line)
		}
		return fail("still running 5 s after being started with a wrong magic cookie")
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if line, _ := p.firstLine(time.Second); line != "" {
		if _, err := plugin.ParseHandshakeLine(line); err == nil {
			return fail("printed a handshake line before exiting: %q", line)
		}
	}
	if p.err == nil {
		return fail("exited with status 0 after %s; a refusal must exit non-zero (%s)", elapsed, describeStderr(p))
	}
	msg := strings.TrimSpace(p.stderr.String())
	if msg == "" {
		return fail("%s after %s without a message on stderr", p.exitDescription(), elapsed)
	}
	return pass("%s after %s; %s", p.exitDescription(), elapsed, describeStderr(p))
}

func caseHandshakeVersion(_ context.Context, k *kit) verdict {
	offers := [][]int{{plugin.ProtocolVersion}, {plugin.ProtocolVersion, futureVersion}, {futureVersion, plugin.ProtocolVersion}}
	seen := make([]string, len(offers))
	errs := make([]error, len(offers))
	var wg sync.WaitGroup
	for i, offer := range offers {
		wg.Go(func() {
			p, h, err := k.readHandshake(offer)
			if p != nil {
				_ = p.stop()
			}
			name := joinInts(offer)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("offered %s: %w", name, err)
			case h.AppVersion != plugin.ProtocolVersion:
				errs[i] = fmt.Errorf("offered %s it answered %d, want %d", name, h.AppVersion, plugin.ProtocolVersion)
			default:
				seen[i] = fmt.Sprintf("offered %s → %d", name, h.AppVersion)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail("%v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return pass("%s", strings.Join(seen, "; "))
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func caseShutdown(ctx context.Context, k *kit) verdict {
	s, err := k.launch(ctx)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.c.Shutdown(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail("still running 2 s after go-plugin's controller Shutdown")
		}
		return fail("%v", err)
	}
	return pass("exited %s after the controller's Shutdown", time.Since(start).Round(time.Millisecond))
}

func caseHostDeath(_ context.Context, k *kit) verdict {
	if !hostDeathSupported {
		return skip("the host's parent-death signal exists only on Linux")
	}
	hs, err := handshakeEnv([]int{plugin.ProtocolVersion})
	if err != nil {
		return fail("%v", err)
	}
	host, err := startStandIn(k.bin, k.opts.Args, append(append([]string{}, k.env...), hs...), k.opts.handshakeTimeout())
	if err != nil {
		return fail("%v", err)
	}
	pid := host.report.Pid
	defer host.stop()
	h, err := plugin.ParseHandshakeLine(host.report.Line)
	if err != nil {
		host.die()
		return fail("first stdout line is not the handshake line: %v", err)
	}
	start := time.Now()
	host.die()
	for deadline := start.Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		gone := processGone(pid)
		conn, err := net.DialTimeout(h.Network, h.Address, 100*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		switch {
		case gone && err != nil:
			return pass("the plugin process (pid %d) ended and %s %s refuses connections %s after its host was killed",
				pid, h.Network, h.Address, time.Since(start).Round(time.Millisecond))
		case time.Now().Before(deadline):
			continue
		case !gone:
			return fail("the plugin process (pid %d) was still running 2 s after its host was killed", pid)
		default:
			return fail("2 s after its host was killed, something still accepts connections at %s %s: the process serving the plugin is not the one the host started", h.Network, h.Address)
		}
	}
}
