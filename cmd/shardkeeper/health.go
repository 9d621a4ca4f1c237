package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultHealthServer is the node health probes unless --server or
// $SHARDKEEPER_SERVER says otherwise: serve's default HTTP address, which
// a node listening on 0.0.0.0:8080 (the container image) also answers.
const defaultHealthServer = "http://" + defaultHTTPAddr

// maxHealthAnswer bounds what health reads of a probe's answer: the probes
// answer one line.
const maxHealthAnswer = 4 << 10

func newHealthCommand() *cobra.Command {
	var (
		server   string
		live     bool
		timeout  time.Duration
		insecure bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a running node's /readyz (or /livez): exit 0 when it answers 200, 1 otherwise",
		Long: `Probe a running node's readiness (/readyz: the node can issue keys) or,
with --live, its liveness (/livez), and exit 0 when the probe answers 200,
1 otherwise (not ready, unreachable, no answer within --timeout). It is the
container image's HEALTHCHECK: the image has no shell and no curl.

The node is --server, else $` + envServer + `, else ` + defaultHealthServer + `.
The probes need no token and health sends none.`,
		Args: args(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				server = os.Getenv(envServer)
			}
			if server == "" {
				server = defaultHealthServer
			}
			if timeout <= 0 {
				return usagef("--timeout %v: must be above 0", timeout)
			}
			c, err := newAPIClient(server, "")
			if err != nil {
				return err
			}
			path := "/readyz"
			if live {
				path = "/livez"
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			answer, err := probe(ctx, c.base.String()+path, insecure)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", c.base.String()+path, answer)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", "", "the node's HTTP API (default $"+envServer+", else "+defaultHealthServer+")")
	fl.BoolVar(&live, "live", false, "probe /livez (the process answers) instead of /readyz (the node can issue keys)")
	fl.DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	fl.BoolVar(&insecure, "insecure-skip-verify", false, "accept any certificate from an https --server (for a node whose certificate names another host than the probed address; the probe sends no secret)")
	return cmd
}

// probe GETs url and returns the first line of a 200 answer. Any other
// status, a transport error or ctx's end is an error that says which.
func probe(ctx context.Context, url string, insecure bool) (string, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a probe asks the node itself, never a proxy
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by --insecure-skip-verify; nothing secret is sent
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w (is `shardkeeper serve` running with its HTTP API there? check --server)", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthAnswer))
	if err != nil {
		return "", fmt.Errorf("%s: reading the answer: %w", url, err)
	}
	answer, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, answer)
	}
	return answer, nil
}
