package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpJSDir holds the TypeScript SDK's client (client.mjs) and its locked dependencies.
const mcpJSDir = "mcpjs"

// installMCPJS installs the client's locked dependencies when they are missing, as a
// fresh clone has them.
func installMCPJS(t *testing.T) {
	t.Helper()
	installNodeDeps(t, mcpJSDir, filepath.Join("@modelcontextprotocol", "sdk", "package.json"))
}

// TestMCPThroughTheGuardWithTheTypeScriptSDK drives the guard with the official MCP
// TypeScript SDK's client (Node), against the Go SDK's server: the SDK a JavaScript
// agent uses sees a poisoned tool hidden, a blocked call as a tool error with the reason,
// a secret redacted, progress before the result, its cancellation reaching the server,
// and a dropped stream as a prompt error.
func TestMCPThroughTheGuardWithTheTypeScriptSDK(t *testing.T) {
	installMCPJS(t)
	server := newMCPServer(t, false)
	g := startGuard(t, mcpPolicy, flags("--mcp-upstream", "workspace="+server.url))

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", g.URL+"/mcp/workspace")
	cmd.Dir = mcpJSDir
	var stderr strings.Builder // written by exec's copier, read after Wait
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("client stderr:\n%s", stderr.String())
		}
	}()

	type step struct {
		Step       string         `json:"step"`
		Names      []string       `json:"names"`
		IsError    bool           `json:"isError"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
		Message    string         `json:"message"`
		Error      string         `json:"error"`
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var s step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("client printed %q", sc.Text())
		}
		seen[s.Step] = true
		switch s.Step {
		case "tools":
			if strings.Join(s.Names, ",") != "read,send,slow" {
				t.Errorf("tools %v, want read, send and slow (sync hidden)", s.Names)
			}
		case "allowed":
			if s.IsError || s.Text != "sent to team" {
				t.Errorf("allowed call: %+v", s)
			}
		case "blocked":
			if !s.IsError || s.Text != "Tools may not move data out of this workspace." {
				t.Errorf("blocked call: %+v", s)
			}
			if server.sends.Load() != 1 {
				t.Errorf("the server ran send %d times, want only the allowed call", server.sends.Load())
			}
		case "redacted":
			if strings.Contains(s.Text, "tok_a1b2c3d4") || !strings.Contains(s.Text, "[REDACTED:api-token]") ||
				s.Structured["content"] != "deploy.md: deploy key [REDACTED:api-token]" {
				t.Errorf("redacted result: %+v", s)
			}
		case "progress":
			if s.Message != "copied [REDACTED:api-token]" {
				t.Errorf("progress message %q", s.Message)
			}
			server.progressSeen <- struct{}{} // the tool answers once the client has its progress
		case "slow":
			if s.Text != "done" {
				t.Errorf("slow call: %+v", s)
			}
		case "cancelled":
			if s.Error == "" {
				t.Error("a cancelled call returned a result")
			}
			select {
			case <-server.cancelled:
			case <-ctx.Done():
				t.Fatal("the server's tool was not cancelled")
			}
		case "dropped":
			if !strings.Contains(s.Error, "ended its stream before answering") {
				t.Errorf("dropped stream: %q", s.Error)
			}
		}
	}
	for _, want := range []string{"connected", "tools", "allowed", "blocked", "redacted", "progress", "slow", "cancelled", "dropped", "closed"} {
		if !seen[want] {
			t.Errorf("the client never reached step %s", want)
		}
	}
}
