package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const policyYAML = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: project-words}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: That project is not discussed here.
`

// The binary starts from a policy file, reports SERVING on the gRPC health service once
// the policy is in force, answers a blocked prompt with the guard's 400, and stops on
// SIGTERM.
func TestTheBinaryServesExtProcFromAPolicyFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "guard-extproc")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "--policy-file", policyFile, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	addr := ""
	var logged []string
	for addr == "" && lines.Scan() {
		logged = append(logged, lines.Text())
		var rec struct {
			Msg  string `json:"msg"`
			GRPC string `json:"grpc"`
		}
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "guard-extproc listening" {
			addr = rec.GRPC
		}
	}
	if addr == "" {
		t.Fatalf("no listening line:\n%s", strings.Join(logged, "\n"))
	}
	go func() {
		for lines.Scan() { // keep draining the log
		}
	}()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not SERVING: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	stream, err := extprocv3.NewExternalProcessorClient(conn).Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Tell me about bluebird"}]}`)
	hv := func(k, v string) *corev3.HeaderValue { return &corev3.HeaderValue{Key: k, RawValue: []byte(v)} }
	for _, req := range []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
			Headers: []*corev3.HeaderValue{hv(":method", "POST"), hv(":path", "/v1/chat/completions"), hv("content-type", "application/json")}}}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
	} {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ir := resp.GetImmediateResponse(); ir != nil {
			if ir.GetStatus().GetCode() != 400 || !strings.Contains(string(ir.GetBody()), "content_policy_violation") {
				t.Fatalf("immediate response %d %s", ir.GetStatus().GetCode(), ir.GetBody())
			}
			break
		}
		if req.GetRequestBody() != nil {
			t.Fatal("the blocked prompt was not answered with an ImmediateResponse")
		}
	}
	_ = stream.CloseSend()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop on SIGTERM")
	}
}

func TestFlags(t *testing.T) {
	if _, err := parseFlags([]string{"--policy-file", "p.yaml", "extra"}); err == nil {
		t.Error("a stray argument was accepted")
	}
	o, err := parseFlags([]string{"--policy-file", "p.yaml", "--control-plane", "https://cp:9444"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.policy.Validate(); err == nil {
		t.Error("two policy sources were accepted")
	}
	o, _ = parseFlags([]string{"--control-plane", "http://cp:9444"})
	if err := o.policy.Validate(); err == nil {
		t.Error("a plaintext control plane was accepted")
	}
	o, _ = parseFlags([]string{"--policy-file", "p.yaml", "--tls-cert-file", "c.pem"})
	if err := run(o, nil); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Errorf("a certificate without its key: %v", err)
	}
}
