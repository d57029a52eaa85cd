package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// SnapshotFile is the name of the persisted snapshot in the snapshot directory.
const SnapshotFile = "snapshot.json"

// Client subscribes a guard to the operator's control plane: it applies each snapshot
// pushed for its pod, acknowledges it, persists the last good one and, when the operator
// cannot be reached at start, enforces the persisted one. It implements
// policysource.Source.
type Client struct {
	// URL is the control plane's base URL (https://…).
	URL string
	// TokenFile is the projected service-account token, read again for every poll (the
	// kubelet rotates it).
	TokenFile string
	// CAFile is the PEM bundle the control plane's certificate must chain to.
	CAFile string
	// SnapshotDir is where the last good snapshot is persisted; empty persists nothing.
	SnapshotDir string
	// Log receives connection state changes; never content or credentials.
	Log *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between failed polls (full jitter);
	// zero means 200ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// PollTimeout bounds one poll; the operator answers within its long-poll wait
	// (30s), so zero means 90s.
	PollTimeout time.Duration
	// HTTPClient overrides the client built from CAFile (tests).
	HTTPClient *http.Client
	// TracingHeaders, when set, receives the tracing headers of each snapshot the control
	// plane pushed and the guard applied (Snapshot.Tracing: the collector's endpoint and
	// the headers, in memory only), or "" and nil when it holds none: the guard's tracer
	// sends them from then on (tracing.Tracer.SetHeaders). It is not called for a
	// persisted snapshot, which holds no headers.
	TracingHeaders func(endpoint string, headers map[string]string)
	// TracingClientCertificate, when set, receives the client certificate of each snapshot
	// the control plane pushed and the guard applied (Snapshot.Tracing.ClientCertificate,
	// with the collector's endpoint; in memory only), or "" and nil when it holds none: the
	// guard's tracer presents it from then on (tracing.Tracer.SetClientTLS). It is not
	// called for a persisted snapshot, which holds none.
	TracingClientCertificate func(endpoint string, c *ClientCertificate)
}

// Run implements policysource.Source. apply's error refuses a snapshot: the refusal is
// reported to the operator and the previous policy stays in force.
func (c *Client) Run(ctx context.Context, apply func(*policy.Snapshot) error, report func(error)) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var req SubscribeRequest
	if snap, err := c.loadPersisted(); err != nil {
		report(fmt.Errorf("persisted snapshot refused: %w", err))
	} else if snap != nil {
		if err := c.apply(snap, apply); err != nil {
			report(fmt.Errorf("persisted snapshot %s refused: %w", snap.Version, err))
		} else {
			log.Info("Enforcing the persisted policy snapshot until the control plane answers", "version", snap.Version)
			req.Running = snap.Version
			if lacksCredentials(snap) {
				// Its providers' credentials were never on disk: the operator is asked for
				// the whole snapshot again (a version it does not see running).
				log.Info("The persisted snapshot's model providers and tracing credentials wait for the control plane",
					"providers", len(snap.Providers), "tracing", snap.Tracing != nil)
				req.Running = ""
			}
		}
	}

	hc := c.HTTPClient
	backoff := c.minBackoff()
	connected, failing := false, false
	for ctx.Err() == nil {
		if hc == nil {
			var err error
			if hc, err = HTTPClientFor(c.CAFile); err != nil {
				log.Warn("Cannot reach the control plane yet", "error", err.Error())
				sleep(ctx, jitter(backoff))
				backoff = min(2*backoff, c.maxBackoff())
				continue
			}
		}
		snap, raw, err := c.poll(ctx, hc, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Unreachable is a state, not a policy error: said once when it begins (and at
			// start), then at debug level on every retry.
			if connected || !failing {
				log.Warn("The control plane is unreachable; the policy in force stays, retrying",
					"running", req.Running, "error", err.Error())
			} else {
				log.Debug("The control plane is still unreachable", "error", err.Error())
			}
			connected, failing = false, true
			sleep(ctx, jitter(backoff))
			backoff = min(2*backoff, c.maxBackoff())
			continue
		}
		if !connected {
			log.Info("Subscribed to the control plane", "running", req.Running)
			connected, failing = true, false
		}
		backoff = c.minBackoff()
		if snap == nil {
			continue // nothing new within the long-poll wait
		}
		if err := c.apply(snap, apply); err != nil {
			report(fmt.Errorf("policy snapshot %s refused: %w", snap.Version, err))
			msg := err.Error()
			if len(msg) > MaxErrorChars {
				msg = msg[:MaxErrorChars]
			}
			req.Refused = &Refusal{Version: snap.Version, Error: msg}
			continue
		}
		req.Running, req.Refused = snap.Version, nil // the guard logs what it applied
		if c.TracingHeaders != nil {
			if snap.Tracing != nil {
				c.TracingHeaders(snap.Tracing.Endpoint, snap.Tracing.Headers)
			} else {
				c.TracingHeaders("", nil)
			}
		}
		if c.TracingClientCertificate != nil {
			if snap.Tracing != nil {
				c.TracingClientCertificate(snap.Tracing.Endpoint, snap.Tracing.ClientCertificate)
			} else {
				c.TracingClientCertificate("", nil)
			}
		}
		if err := c.persist(raw); err != nil {
			report(fmt.Errorf("persisting the policy snapshot: %w", err))
		}
	}
}

// apply compiles a snapshot and hands it to the guard.
func (c *Client) apply(s *Snapshot, apply func(*policy.Snapshot) error) error {
	compiled, err := Compile(s)
	if err != nil {
		return err
	}
	return apply(compiled)
}

// Compile compiles a snapshot as the operator did, with its providers; the compiled
// snapshot carries the wire version.
func Compile(s *Snapshot) (*policy.Snapshot, error) {
	for i := range s.Guardrails {
		if s.Guardrails[i].Kind == policy.KindClusterGuardrail {
			continue // no namespace: policy.Compile refuses one that has one
		}
		if s.Guardrails[i].Namespace != s.Namespace {
			return nil, fmt.Errorf("guardrail %s/%s is not of namespace %s", s.Guardrails[i].Namespace, s.Guardrails[i].Name, s.Namespace)
		}
	}
	compiled, err := policy.Compile(policy.Sources{Classifiers: s.Classifiers, Guardrails: s.Guardrails, Tokens: s.Credentials})
	if err != nil {
		return nil, err
	}
	if compiled.Providers, err = compileProviders(s); err != nil {
		return nil, err
	}
	compiled.Version = s.Version
	return compiled, nil
}

// poll sends one long-poll request; a nil snapshot means nothing new.
func (c *Client) poll(ctx context.Context, hc *http.Client, sr SubscribeRequest) (*Snapshot, []byte, error) {
	token, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the service-account token: %w", err)
	}
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, nil, err
	}
	timeout := c.PollTimeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.JoinPath(c.URL, SubscribePath)
	if err != nil {
		return nil, nil, fmt.Errorf("control-plane URL: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	hr.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	hr.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, nil, fmt.Errorf("control plane: %w", redactURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxSnapshotBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("control plane: reading the answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil, nil
	case http.StatusOK:
	default:
		return nil, nil, fmt.Errorf("control plane answered %s: %s", resp.Status, firstLine(raw))
	}
	if len(raw) > MaxSnapshotBytes {
		return nil, nil, fmt.Errorf("control plane: snapshot larger than %d bytes", MaxSnapshotBytes)
	}
	s, err := decode(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("control plane: %w", err)
	}
	return s, raw, nil
}

func decode(raw []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decoding the snapshot: %w", err)
	}
	if s.Version == "" {
		return nil, errors.New("snapshot without a version")
	}
	return &s, nil
}

// persisted is the on-disk form of a snapshot: the bytes as received and their digest.
type persisted struct {
	SHA256   string          `json:"sha256"`
	Snapshot json.RawMessage `json:"snapshot"`
}

// persist writes the snapshot atomically, readable by the guard's user only, without its
// providers' credentials (see providers.go).
func (c *Client) persist(raw []byte) error {
	if c.SnapshotDir == "" {
		return nil
	}
	raw, err := withoutCredentials(raw)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	b, err := json.Marshal(persisted{SHA256: hex.EncodeToString(sum[:]), Snapshot: raw})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.SnapshotDir, ".snapshot-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.SnapshotDir, SnapshotFile))
}

// loadPersisted reads the persisted snapshot; nil without an error when there is none.
func (c *Client) loadPersisted() (*Snapshot, error) {
	if c.SnapshotDir == "" {
		return nil, nil
	}
	path := filepath.Join(c.SnapshotDir, SnapshotFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, 2*MaxSnapshotBytes))
	if err != nil {
		return nil, err
	}
	var p persisted
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s is not a snapshot file: %w", path, err)
	}
	sum := sha256.Sum256(p.Snapshot)
	if hex.EncodeToString(sum[:]) != p.SHA256 {
		return nil, fmt.Errorf("%s fails its integrity check (sha256 mismatch)", path)
	}
	s, err := decode(p.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// HTTPClientFor returns a client of the control plane: it trusts only the CA bundle in
// caFile. HTTP/1.1: a long poll is one request at a time, so HTTP/2's multiplexing buys
// nothing, and its buffers cost the guard memory and the operator memory per guard.
func HTTPClientFor(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile) //nolint:gosec // the guard's own CA file, from its flags
	if err != nil {
		return nil, fmt.Errorf("reading the control plane's CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	// No proxy (the control plane is in-cluster), and no roots but the CA file's.
	tr := egress.Transport(pool)
	tr.ForceAttemptHTTP2 = false
	// A non-nil, empty TLSNextProto keeps the transport on HTTP/1.1.
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	tr.IdleConnTimeout = 5 * time.Minute
	tr.MaxIdleConnsPerHost = 1
	return &http.Client{Transport: tr}, nil
}

func (c *Client) minBackoff() time.Duration {
	if c.MinBackoff > 0 {
		return c.MinBackoff
	}
	return 200 * time.Millisecond
}

func (c *Client) maxBackoff() time.Duration {
	if c.MaxBackoff > 0 {
		return c.MaxBackoff
	}
	return 30 * time.Second
}

// jitter is "full jitter": a uniform wait in [d/2, d], so that guards that lost the
// operator together do not come back together.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1) //nolint:gosec // spreading retries needs no cryptographic randomness
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// redactURLError drops the query of a URL in a transport error (there is none today,
// but the token must never reach a log through one).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
