package incluster

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// TestAnAppCallsASharedGuardOverHTTPS is TestAnAppWithoutASidecarCallsThroughASharedGuard
// with spec.tls (docs/shared-guard.md, HTTPS between apps and the guard): the Proxy
// sample applied before its Secret waits for it (TLSSecretNotFound); once the Secret exists
// its pods become Ready, status.url is https://llm-guard.NS.svc, the Service's port is https
// 443 to the guard's 15080 and both it and the EndpointSlice advertise appProtocol https. Over a port-forward
// to a guard pod, an OpenAI SDK trusting the CA (base URL status.url + /v1, the
// certificate checked against the Service's name) gets its prompts back redacted, streamed
// and not, over HTTP/2; a cleartext client gets 400 and no completion, and so does an app
// calling the Service in cleartext from inside the cluster. The Secret renewed in place
// reaches new connections without a restart of the guard.
func TestAnAppCallsASharedGuardOverHTTPS(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns = "team-tls"
	host := "llm-guard." + ns + ".svc"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
	u.kubectl("-n", ns, "apply", "-f", "config/samples/pii-secrets-redaction.yaml")
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrail/redact-pii-secrets", "--timeout=1m")

	sample, err := os.ReadFile(filepath.Join(c.Root, "config", "samples", "shared", "shared-guard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sg := strings.Replace(string(sample), "namespace: team-a", "namespace: "+ns, 1)
	sg = strings.Replace(sg, "spec:\n", "spec:\n  openAIUpstream: http://provider.provider.svc.cluster.local:8080\n  tls: {secretName: llm-guard-tls}\n", 1)
	if !strings.Contains(sg, "tls: {secretName: llm-guard-tls}") || !strings.Contains(sg, "namespace: "+ns) {
		t.Fatalf("the sample has no 'namespace: team-a' or 'spec:' line to edit:\n%s", sample)
	}
	mustApply(t, u, sg)
	u.eventually(time.Minute, func(s string) bool { return s == "TLSSecretNotFound" },
		"-n", ns, "get", "sharedguard", "llm-guard", "-o", `jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}`)

	ca := newTLSIssuer(t)
	mustApply(t, u, ca.secret(t, ns, "llm-guard-tls", host, 2001))
	start := time.Now()
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "sharedguard/llm-guard", "--timeout=3m")
	t.Logf("SharedGuard Ready in %s after its Secret", time.Since(start).Round(time.Millisecond))
	if got := u.kubectl("-n", ns, "get", "sharedguard", "llm-guard", "-o", "jsonpath={.status.readyReplicas} {.status.url}"); got != "2 https://"+host {
		t.Fatalf("status: %q", got)
	}
	if got := u.kubectl("-n", ns, "get", "service", "llm-guard", "-o",
		"jsonpath={.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.ports[0].appProtocol}"); got != "https 443 15080 https" {
		t.Fatalf("Service: %q", got)
	}
	if got := u.kubectl("-n", ns, "get", "endpointslice", "llm-guard-ipv4", "-o",
		"jsonpath={.ports[0].name} {.ports[0].port} {.ports[0].appProtocol} {.endpoints[*].conditions.ready}"); got != "https 15080 https true true" {
		t.Fatalf("EndpointSlice: %q", got)
	}
	pods := strings.Fields(u.kubectl("-n", ns, "get", "pods", "-l", "guardrail.dev/shared-guard=llm-guard", "-o", "jsonpath={.items[*].metadata.name}"))
	addr := portForward(t, u, ns, pods[0], 15080)

	// The app's client: status.url's name, checked against the certificate, reached through
	// the port-forward; a new connection per call, so each handshake reads the served pair.
	client := func() *http.Client {
		var d net.Dialer
		return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
		}}
	}
	oc := openai.NewClient(oaoption.WithBaseURL("https://"+host+"/v1/"), oaoption.WithAPIKey("sk-team-tls"),
		oaoption.WithMaxRetries(0), oaoption.WithHTTPClient(client()))
	const prompt = "write to jane.doe@example.com today"
	params := openai.ChatCompletionNewParams{Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}

	t.Run("the app's prompts come back redacted over HTTPS, streamed and not", func(t *testing.T) {
		got, err := oc.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if text := got.Choices[0].Message.Content; strings.Contains(text, "jane.doe@") || !strings.Contains(text, "[REDACTED:email]") {
			t.Fatalf("answer %q", text)
		}
		stream := oc.Chat.Completions.NewStreaming(t.Context(), params)
		var text strings.Builder
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if s := text.String(); strings.Contains(s, "jane.doe@") || !strings.Contains(s, "[REDACTED:email]") {
			t.Fatalf("streamed answer %q", s)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+host+"/v1/models", nil)
		resp, err := client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("the guard served %s, want HTTP/2 by ALPN", resp.Proto)
		}
	})

	t.Run("cleartext gets 400 and no completion, through the port-forward and the Service", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/chat/completions",
			strings.NewReader(chatBody(prompt, false)))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("a cleartext call: %d, want 400", resp.StatusCode)
			}
		}
		u := user{t: t, c: c}
		mustApply(t, u, `apiVersion: v1
kind: Pod
metadata:
  name: cleartext-app
  namespace: `+ns+`
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: localhost/guardrail/busybox:dev
      imagePullPolicy: Never
      command: [sleep, infinity]
      env:
        - {name: OPENAI_BASE_URL, value: "http://`+host+`:443/v1"}
      securityContext:
        runAsUser: 65532
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
        seccompProfile: {type: RuntimeDefault}
`)
		u.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/cleartext-app", "--timeout=2m")
		out, err := u.run("kubectl", "-n", ns, "exec", "cleartext-app", "--", "sh", "-c", wgetChat(chatBody(prompt, false))+" 2>&1")
		if err == nil || !strings.Contains(out, "400") || strings.Contains(out, "REDACTED") || strings.Contains(out, "choices") {
			t.Errorf("a cleartext call through the Service: %v, %q; want 400 and no completion", err, out)
		}
	})

	t.Run("the Secret renewed in place is presented without a restart", func(t *testing.T) {
		served := func() (int64, error) {
			d := tls.Dialer{Config: &tls.Config{RootCAs: ca.pool, ServerName: host, MinVersion: tls.VersionTLS12}}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return 0, err
			}
			defer func() { _ = conn.Close() }()
			return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
		}
		if serial, err := served(); err != nil || serial != 2001 {
			t.Fatalf("certificate %d, %v; want 2001", serial, err)
		}
		u := user{t: t, c: c}
		mustApply(t, u, ca.secret(t, ns, "llm-guard-tls", host, 2002))
		deadline := time.Now().Add(3 * time.Minute)
		for {
			serial, err := served()
			if err == nil && serial == 2002 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the renewed certificate was not presented within 3 minutes: %d, %v", serial, err)
			}
			time.Sleep(5 * time.Second)
		}
		if _, err := oc.Chat.Completions.New(t.Context(), params); err != nil {
			t.Errorf("a call after the renewal: %v", err)
		}
		if restarts := u.kubectl("-n", ns, "get", "pod", pods[0], "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); restarts != "0" {
			t.Errorf("the guard restarted %s times", restarts)
		}
		if logs, _ := u.run("kubectl", "-n", ns, "logs", pods[0]); strings.Contains(logs, "PRIVATE KEY") || !strings.Contains(logs, "Reloaded the TLS certificate") {
			t.Errorf("the guard's log does not show the reload, or shows a key:\n%s", logs)
		}
	})
}
