package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

const smokePolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin: {packs: [pii, secrets]}
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: redact}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Stream, Output]
  threshold: 1
  action: Redact
  reason: redacted
`

func TestSmoke(t *testing.T) {
	fp := fakeprovider.New()
	defer fp.Close()
	u, _ := url.Parse(fp.URL)
	px := New(Config{OpenAIUpstream: u, AnthropicUpstream: u})
	src, err := policysource.Decode([]byte(smokePolicy))
	if err != nil {
		t.Fatal(err)
	}
	_ = src
	f := t.TempDir() + "/p.yaml"
	if err := writeFile(f, smokePolicy); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: f}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := px.Apply(snap); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(px)
	defer srv.Close()

	fp.Enqueue(fakeprovider.Reply("My card is 4111 1111 ", "1111 1111 and that", " is all."))
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		bytes.NewBufferString(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	t.Logf("stream:\n%s", b)
	if strings.Contains(string(b), "4111") {
		t.Error("card leaked")
	}

	fp.Enqueue(fakeprovider.Reply("My card is 4111 1111 1111 1111 and that is all."))
	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json",
		bytes.NewBufferString(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	t.Logf("non-stream: %d %s", resp.StatusCode, b)
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o600)
}
