package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// waitEnforced waits until every Guardrail in ns reports as many acknowledging pods as it
// selects, and selects at least one.
// deployDemo deploys the fake provider, namespace demo with the samples, and the demo app,
// and waits until the app's guard enforces every Guardrail of demo.
func (d *dev) deployDemo(ctx context.Context, build string) error {
	for _, ns := range []string{"provider", "demo"} {
		if err := d.k.waitNotTerminating(ctx, ns); err != nil {
			return err
		}
	}
	d.say("deploying the fake provider (config/dev/provider.yaml), namespace demo (config/dev/demo.yaml), the samples there, and the demo app (config/dev/chat.yaml)")
	for _, step := range [][]string{
		{"apply", "-f", "config/dev/provider.yaml"},
		{"apply", "-f", "config/dev/demo.yaml"},
		{"-n", "demo", "apply", "-f", "config/samples/"},
		// The app's first request goes out as it starts: the policies must be in effect.
		{"-n", "demo", "wait", "--for=condition=Ready", "guardrails", "--all", "--timeout=2m"},
	} {
		if _, err := d.k.kubectl(ctx, step...); err != nil {
			return err
		}
	}
	if err := d.k.applyApp(ctx, build); err != nil {
		return err
	}
	for _, step := range [][]string{
		{"-n", "provider", "rollout", "status", "deploy/provider", "--timeout=3m"},
		{"-n", "demo", "rollout", "status", "deploy/chat", "--timeout=3m"},
	} {
		if _, err := d.k.kubectl(ctx, step...); err != nil {
			return err
		}
	}
	d.say("waiting for the demo pod's guard to acknowledge every Guardrail in demo (ENFORCED n/n)")
	return d.k.waitEnforced(ctx, "demo")
}

// serve forwards the demo guard and the provider to loopback ports for as long as ctx
// lasts, waits until they answer, and writes their addresses into the env file.
func (d *dev) serve(ctx context.Context) (map[string]string, error) {
	o := d.o
	guard := forward{k: d.k, ns: "demo", target: "deploy/chat", ports: []string{fmt.Sprintf("%d:15080", o.guardPort), fmt.Sprintf("%d:15090", o.adminPort)}}
	prov := forward{k: d.k, ns: "provider", target: "svc/provider", ports: []string{fmt.Sprintf("%d:8080", o.provPort)}}
	go guard.keep(ctx)
	go prov.keep(ctx)
	env := map[string]string{
		"KUBECONFIG":         d.l.Kubeconfig(),
		"OPENAI_BASE_URL":    fmt.Sprintf("http://127.0.0.1:%d/v1", o.guardPort),
		"ANTHROPIC_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", o.guardPort),
		"GUARD_ADMIN_URL":    fmt.Sprintf("http://127.0.0.1:%d", o.adminPort),
		"PROVIDER_URL":       fmt.Sprintf("http://127.0.0.1:%d", o.provPort),
	}
	for _, u := range []string{env["GUARD_ADMIN_URL"] + "/readyz", env["PROVIDER_URL"] + "/healthz"} {
		if err := waitHTTP(ctx, u); err != nil {
			return nil, fmt.Errorf("port-forward: %w", err)
		}
	}
	return env, writeEnv(o.dir, env)
}

func (k kube) waitEnforced(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	for {
		out, err := k.kubectl(ctx, "-n", ns, "get", "guardrails", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}{" "}{end}`)
		if err == nil {
			last = strings.TrimSpace(out)
			if enforcedAll(last) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("guardrails in %s not enforced: %q", ns, last)
		case <-time.After(time.Second):
		}
	}
}

// enforcedAll reports whether every "name=acked/selected" field that selects pods has
// acked == selected, and at least one selects pods. A Guardrail that selects no pod of the
// demo (config/samples/pseudonymize-pii.yaml selects a mail assistant's) has nothing to
// wait for.
func enforcedAll(s string) bool {
	selecting := 0
	for _, f := range strings.Fields(s) {
		_, counts, _ := strings.Cut(f, "=")
		acked, selected, _ := strings.Cut(counts, "/")
		if selected == "" || selected == "0" {
			continue
		}
		if acked != selected {
			return false
		}
		selecting++
	}
	return selecting > 0
}

// showDecisions prints the Guardrails once the demo traffic's decisions reach their status.
func (k kube) showDecisions(ctx context.Context) {
	for range 60 {
		out, err := k.kubectl(ctx, "-n", "demo", "get", "guardrails", "-o", "jsonpath={.items[*].status.decisions}")
		if err == nil && strings.Contains(out, `"`) && strings.ContainsAny(out, "123456789") {
			if table, err := k.kubectl(ctx, "get", "guardrails", "-A"); err == nil {
				fmt.Fprintf(os.Stderr, "\nThe demo traffic's decisions are in the Guardrails' status (kubectl get guardrails -A):\n%s", table)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// demoTraffic sends three requests through the guard and describes what came back: an
// address redacted from an answer, a streamed answer with a credential stopped, and a
// harmless answer passed through.
func demoTraffic(ctx context.Context, base string) []string {
	type req struct{ what, body string }
	reqs := []req{
		{"an answer with an email address (redact-pii-secrets)", `{"model":"demo","messages":[{"role":"user","content":"Please write to jane.doe@example.com about the invoice."}]}`},
		{"a streamed answer with a GitHub token (stop-streamed-secrets)", `{"model":"demo","stream":true,"messages":[{"role":"user","content":"Deploy with GITHUB_TOKEN=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 and report back."}]}`},
		{"a harmless answer", `{"model":"demo","messages":[{"role":"user","content":"What is the capital of France?"}]}`},
	}
	var out []string
	for _, r := range reqs {
		out = append(out, r.what+":")
		b, status, err := post(ctx, base+"/chat/completions", r.body)
		if err != nil {
			out = append(out, "  error: "+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("  → %d %s", status, summarize(b)))
	}
	return out
}

// summarize gives the answer's text (a completion's message, or a stream's deltas joined)
// and how it finished, for one line on the terminal.
func summarize(b []byte) string {
	type choice struct {
		Message      struct{ Content string } `json:"message"`
		Delta        struct{ Content string } `json:"delta"`
		FinishReason string                   `json:"finish_reason"`
	}
	var text strings.Builder
	finish := ""
	add := func(data []byte) bool {
		var c struct{ Choices []choice }
		if json.Unmarshal(data, &c) != nil {
			return false
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Message.Content + ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		return true
	}
	if !add(b) {
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && data != "[DONE]" {
				add([]byte(data))
			}
		}
	}
	if text.Len() == 0 && finish == "" {
		return strings.Join(strings.Fields(string(b)), " ")
	}
	return fmt.Sprintf("%q (finish_reason %s)", text.String(), finish)
}

func whereToLook(dir string, env map[string]string) string {
	return fmt.Sprintf(`
Where to look (in another shell: source %[1]s/env):
  kubectl get guardrails,classifiers -A          ENFORCED n/n, and the decision counters moving
  kubectl -n demo get pod -l app=chat -o jsonpath='{.items[0].spec.initContainers[*].name}'
                                                 the guard the webhook injected (a native sidecar)
  kubectl -n demo get events --field-selector involvedObject.kind=Guardrail
Send your own request through the demo pod's guard:
  curl -s $OPENAI_BASE_URL/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"demo","messages":[{"role":"user","content":"call me on +44 20 7946 0958"}]}'
  or with any OpenAI SDK: OPENAI_BASE_URL=%[2]s OPENAI_API_KEY=unused
  or from inside the app: kubectl -n demo exec deploy/chat -c app -- sh (OPENAI_BASE_URL is set there)
The app's first request, sent as it started (the guard enforced before the app ran):
  kubectl -n demo logs deploy/chat -c app
Metrics of the demo guard:  curl -s $GUARD_ADMIN_URL/metrics | grep ^guard_
The provider, unguarded:    curl -s $PROVIDER_URL/v1/chat/completions -d '{"messages":[{"role":"user","content":"hi"}]}'
Change a policy and watch:  kubectl -n demo patch guardrail redact-pii-secrets --type merge -p '{"spec":{"mode":"Report"}}'
                            then the answers keep the address and status.decisions.wouldRedact counts
Stop: Ctrl-C here, or make dev-down.
`, dir, env["OPENAI_BASE_URL"])
}

// forward keeps a kubectl port-forward running while ctx lasts: a forward ends when its pod
// goes (a rollout, a deleted pod), and the next one finds the new pod.
type forward struct {
	k      kube
	ns     string
	target string
	ports  []string
}

func (f forward) keep(ctx context.Context) {
	for ctx.Err() == nil {
		args := append([]string{"-n", f.ns, "port-forward", "--address", "127.0.0.1", f.target}, f.ports...)
		cmd := exec.CommandContext(ctx, "kubectl", args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+f.k.kubeconfig)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		_ = cmd.Run()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func post(ctx context.Context, url, body string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

func waitHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v", url, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func writeEnv(dir string, env map[string]string) error {
	var b bytes.Buffer
	b.WriteString("# Written by make dev while it runs; source it: . bin/dev/env\n")
	for _, k := range []string{"KUBECONFIG", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GUARD_ADMIN_URL", "PROVIDER_URL"} {
		fmt.Fprintf(&b, "export %s=%q\n", k, env[k])
	}
	b.WriteString("# The fake provider ignores keys; the SDKs want one set.\nexport OPENAI_API_KEY=unused ANTHROPIC_API_KEY=unused\n")
	return os.WriteFile(filepath.Join(dir, "env"), b.Bytes(), 0o600)
}
