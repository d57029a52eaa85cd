package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload/tlstest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// serviceName is the DNS name a SharedGuard's certificate is issued for; the clients
// below dial 127.0.0.1 and check the certificate against it.
const serviceName = "llm-guard.team-a.svc"

// freeAddr is a loopback address no one listens on (the guard binds it next).
func freeAddr(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// tlsClient is an HTTPS client trusting ca, dialling addr whatever the URL's host, and
// offering h2 by ALPN unless http1.
func tlsClient(ca *tlstest.CA, addr string, http1 bool) *http.Client {
	var d net.Dialer
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: !http1,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		DisableKeepAlives: false,
	}
	if http1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// servedSerial is the serial number of the certificate a new connection to addr is
// presented.
func servedSerial(t *testing.T, ca *tlstest.CA, addr string) int64 {
	t.Helper()
	d := tls.Dialer{Config: &tls.Config{RootCAs: ca.Pool, ServerName: serviceName, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer func() { _ = conn.Close() }()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// The guard's proxy serves HTTPS with --tls-cert-file and --tls-key-file from a
// Secret's files, as a SharedGuard with spec.tls renders them: an OpenAI SDK trusting the
// CA, pointed at https://SERVICE:PORT/v1, gets a guarded answer and a guarded SSE stream
// (a Guardrail's redaction applies through TLS); HTTP/2 and HTTP/1.1 are both negotiated
// by ALPN; a cleartext request is answered 400 by the server and never reaches the
// provider; a client trusting another CA fails its handshake. A renewal written into the
// volume as the kubelet writes it is presented to new connections without a restart, a
// replacement that is not a valid pair is refused and the last good one kept. The admin
// listener stays cleartext. The log names certificates, never a key.
func TestTheGuardServesHTTPSAndReloadsARenewedCertificate(t *testing.T) {
	provider := fakeprovider.New(fakeprovider.WithHandler(fakeprovider.Echo))
	defer provider.Close()
	ca := newCAWithVolume(t)
	addr, admin := freeAddr(t), freeAddr(t)
	logs := &syncBuffer{}
	o := options{
		listen: addr, admin: admin, tlsCert: ca.vol.Dir + "/tls.crt", tlsKey: ca.vol.Dir + "/tls.key",
		tlsReloadEvery: 0, // every handshake reads the files
		openaiUpstream: provider.URL, anthropicURL: provider.URL, geminiURL: provider.URL,
		policyFile: "../../config/samples/pii-secrets-redaction.yaml", policyInterval: time.Hour,
		maxBody: 1 << 20, readHeaderTimeout: 10 * time.Second, idle: time.Minute,
		readIdle: 10 * time.Second, writeIdle: 10 * time.Second, grace: time.Second,
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- runContext(ctx, o, slog.New(slog.NewJSONHandler(logs, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the guard stopped with %v", err)
		}
	}()
	waitReady(t, "http://"+admin+"/readyz", done)

	// An OpenAI SDK, its base URL the Service's with /v1, trusting the CA.
	client := openai.NewClient(oaoption.WithBaseURL("https://"+serviceName+":"+port(addr)+"/v1/"),
		oaoption.WithAPIKey("sk-test"), oaoption.WithMaxRetries(0), oaoption.WithHTTPClient(tlsClient(ca.CA, addr, false)))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("my badge is EMP-123456, thanks")}}
	got, err := client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatalf("a chat completion over TLS: %v", err)
	}
	if text := got.Choices[0].Message.Content; !strings.HasPrefix(text, "You said: ") || strings.Contains(text, "EMP-123456") {
		t.Errorf("the answer over TLS is not the guarded one: %q", text)
	}
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var streamed strings.Builder
	chunks := 0
	for stream.Next() {
		chunks++
		if c := stream.Current(); len(c.Choices) > 0 {
			streamed.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the SSE stream over TLS: %v", err)
	}
	if s := streamed.String(); chunks < 2 || !strings.HasPrefix(s, "You said: ") || strings.Contains(s, "EMP-123456") {
		t.Errorf("the stream over TLS (%d chunks) is not the guarded one: %q", chunks, s)
	}
	if n := len(provider.Requests()); n != 2 {
		t.Fatalf("the provider got %d requests, want 2", n)
	}

	// HTTP/2 and HTTP/1.1, each as the client's ALPN asks.
	for _, http1 := range []bool{false, true} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+serviceName+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := tlsClient(ca.CA, addr, http1).Do(req)
		if err != nil {
			t.Fatalf("GET /v1/models (http1 %v): %v", http1, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if want := map[bool]int{false: 2, true: 1}[http1]; resp.ProtoMajor != want || resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/models: %s %d, want HTTP/%d 200", resp.Proto, resp.StatusCode, want)
		}
	}
	before := len(provider.Requests())

	// Cleartext on the TLS port: net/http's 400, nothing forwarded.
	plain := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	if resp, err := plain.Do(req); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a cleartext request on the TLS port: %d, want 400", resp.StatusCode)
		}
	}
	// A client trusting another CA fails its handshake.
	other := tlstest.NewCA(t, "another CA")
	if _, err := tlsClient(other, addr, false).Get("https://" + serviceName + "/v1/models"); err == nil { //nolint:noctx // a test's handshake
		t.Error("a client trusting another CA completed the handshake")
	}
	if n := len(provider.Requests()); n != before {
		t.Errorf("%d requests reached the provider over cleartext or an untrusted handshake", n-before)
	}

	// A renewal, written as the kubelet writes a Secret renewed in place: presented to new
	// connections without a restart.
	if s := servedSerial(t, ca.CA, addr); s != 101 {
		t.Fatalf("serial %d served, want 101", s)
	}
	cert2, key2 := ca.Issue(t, 102, serviceName, serviceName+".cluster.local")
	ca.vol.Write(map[string][]byte{"tls.crt": cert2, "tls.key": key2})
	if s := servedSerial(t, ca.CA, addr); s != 102 {
		t.Fatalf("serial %d served after the renewal, want 102", s)
	}
	if _, err := client.Chat.Completions.New(t.Context(), params); err != nil {
		t.Fatalf("a chat completion after the renewal: %v", err)
	}
	// A key that is not the certificate's: refused, the renewed pair still served.
	_, key3 := ca.Issue(t, 103, serviceName)
	ca.vol.Write(map[string][]byte{"tls.crt": cert2, "tls.key": key3})
	if s := servedSerial(t, ca.CA, addr); s != 102 {
		t.Fatalf("serial %d served after a mismatched pair, want 102", s)
	}
	if s := servedSerial(t, ca.CA, addr); s != 102 {
		t.Fatalf("serial %d served, want 102", s)
	}

	out := logs.String()
	if strings.Count(out, "Reloaded the TLS certificate") != 1 || strings.Count(out, "not a valid pair") != 1 ||
		!strings.Contains(out, "Serving HTTPS over TLS") || !strings.Contains(out, `"tls":true`) {
		t.Errorf("the log does not tell the reload and the refusal once each:\n%s", out)
	}
	for _, key := range [][]byte{ca.key1, key2, key3} {
		if strings.Contains(out, string(bytes.TrimSpace(key))[40:80]) {
			t.Fatalf("the log carries key material:\n%s", out)
		}
	}
}

// A guard given one TLS flag without the other, or files that are not a pair, does not
// start: it never falls back to cleartext.
func TestTheGuardRefusesToStartWithoutAValidPair(t *testing.T) {
	ca := newCAWithVolume(t)
	_, otherKey := ca.Issue(t, 7, serviceName)
	ca2 := &tlstest.SecretVolume{T: t, Dir: t.TempDir()}
	ca2.Write(map[string][]byte{"tls.crt": ca.cert1, "tls.key": otherKey})
	for name, o := range map[string]options{
		"cert alone":      {tlsCert: ca.vol.Dir + "/tls.crt"},
		"key alone":       {tlsKey: ca.vol.Dir + "/tls.key"},
		"missing files":   {tlsCert: ca.vol.Dir + "/nope.crt", tlsKey: ca.vol.Dir + "/nope.key"},
		"mismatched pair": {tlsCert: ca2.Dir + "/tls.crt", tlsKey: ca2.Dir + "/tls.key"},
	} {
		o.listen, o.admin, o.policyFile = freeAddr(t), freeAddr(t), "../../config/samples/pii-secrets-redaction.yaml"
		o.openaiUpstream, o.anthropicURL, o.geminiURL = "https://api.openai.com", "https://api.anthropic.com", "https://g.example"
		if err := runContext(t.Context(), o, slog.New(slog.DiscardHandler)); err == nil ||
			!strings.Contains(err.Error(), "tls-") {
			t.Errorf("%s: the guard started or failed for another reason: %v", name, err)
		}
	}
}

type caWithVolume struct {
	*tlstest.CA
	vol         *tlstest.SecretVolume
	cert1, key1 []byte
}

// newCAWithVolume is a CA and a Secret's volume holding its certificate of serial 101
// for the Service's names.
func newCAWithVolume(t *testing.T) *caWithVolume {
	c := &caWithVolume{CA: tlstest.NewCA(t, "test CA"), vol: &tlstest.SecretVolume{T: t, Dir: t.TempDir()}}
	c.cert1, c.key1 = c.Issue(t, 101, serviceName, serviceName+".cluster.local")
	c.vol.Write(map[string][]byte{"tls.crt": c.cert1, "tls.key": c.key1})
	return c
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// waitReady waits for the admin listener's /readyz (cleartext) to answer 200.
func waitReady(t *testing.T, url string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("the guard stopped: %v", err)
		default:
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = bufio.NewReader(resp.Body).Peek(1)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the guard's /readyz did not answer 200 within 20s")
}
