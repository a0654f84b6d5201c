package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/ui"
	"github.com/obversa/obversa/store/pgstore"
)

func newUICmd(g *globals) *cobra.Command {
	var listen, tokenFile string
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "ui [--storage DIR] [--listen 127.0.0.1:8787] [--token FILE] [--read-only]",
		Short: "Serve a web page of the runs under a storage directory: graphs, live output, approvals",
		Long: `ui serves the run browser: the runs of a storage directory (--storage, default
.obversa) newest first, and for each run its graph with nodes coloured by state,
its timeline of events, each node's attempts, results and artifacts, what its
agents stream, usage, and the command for each action — live while the run runs.
A waiting position can be approved or denied and a paused run resumed from the
page, as ` + "`obversa approve`" + ` and ` + "`obversa resume`" + ` do; --read-only hides and refuses
them.

It listens on loopback (--listen, default 127.0.0.1:8787). Any other address
needs --token FILE, a file holding a secret every request must carry (the
printed address has it as ?token=…). See docs/ui.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			token, err := readUIToken(tokenFile)
			if err != nil {
				return err
			}
			if err := checkListen(listen); err != nil {
				return usageErr(err)
			}
			if !ui.IsLoopback(listen) && token == "" {
				return usageErr(fmt.Errorf("--listen %s is not a loopback address: anyone who reaches it could read and steer runs; give --token FILE (a secret every request must carry) or listen on 127.0.0.1", listen))
			}
			setting, _, err := g.storage()
			if err != nil {
				return err
			}
			if pgstore.IsURL(setting) {
				return usageErr(fmt.Errorf("obversa ui shows the runs of a storage directory; runs kept in PostgreSQL (%s) are not shown yet: use obversa runs and obversa show", pgstore.Redact(setting)))
			}
			exe, err := os.Executable()
			if err != nil {
				return failedErr(err)
			}
			srv, err := ui.New(ui.Options{Storage: setting, Namespace: g.namespace, Token: token, ReadOnly: readOnly,
				Executable: exe, Log: log.New(cmd.ErrOrStderr(), "ui: ", log.LstdFlags)})
			if err != nil {
				return usageErr(err)
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failedErr(fmt.Errorf("--listen %s: %w", listen, err))
			}
			addr := "http://" + ln.Addr().String() + "/"
			if token != "" {
				addr += "?token=" + token
			}
			mode := ""
			if readOnly {
				mode = " (read-only)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving the runs of %s at %s%s\n", setting, addr, mode)
			return serveUI(cmd, srv, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on (host:port); not loopback needs --token")
	cmd.Flags().StringVar(&tokenFile, "token", "", "file holding the secret every request must carry")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "show runs only: no approve, deny or resume")
	return cmd
}

// readUIToken reads the secret of --token FILE: at least 16 characters,
// surrounding white space trimmed. No file gives "".
func readUIToken(tokenFile string) (string, error) {
	if tokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", fileFlagErr("--token", tokenFile, err,
			fmt.Sprintf("--token names a file holding a secret of at least 16 characters, for example one written by `openssl rand -hex 32 > %s`", tokenFile))
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", usageErr(fmt.Errorf("--token %s: the file must hold a secret of at least 16 characters (for example `openssl rand -hex 32 > %s`)", tokenFile, tokenFile))
	}
	return token, nil
}

// serveUI serves srv on ln until SIGINT or SIGTERM, then shuts the server
// down, waiting up to 5 s for requests in flight.
func serveUI(cmd *cobra.Command, srv *ui.Server, ln net.Listener) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(cmd.ErrOrStderr(), "ui: ", log.LstdFlags)}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return failedErr(err)
	case <-ctx.Done():
	}
	srv.Close() // ends the live event streams, so Shutdown need not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return failedErr(err)
	}
	return nil
}

// checkListen refuses a --listen value that is not host:port with a port
// number (0-65535) or service name, saying the form, before the loopback
// rule reads it: "8787" alone was refused as "not a loopback address",
// and "localhost:-1" failed as a run does (exit 1) when the listener was
// opened.
func checkListen(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		example := "127.0.0.1:8787"
		if _, perr := strconv.ParseUint(listen, 10, 16); perr == nil {
			example = "127.0.0.1:" + listen
		}
		return fmt.Errorf("--listen %s is not host:port: give the address and the port, for example --listen %s", echoArg(listen), example)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--listen %s: port %s is neither a number from 0 to 65535 nor a service name, for example --listen %s", echoArg(listen), echoArg(port), net.JoinHostPort(host, "8787"))
	}
	return nil
}
