package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// fakeOperator answers polls with one snapshot until the guard runs or refused it, and
// records every poll.
type fakeOperator struct {
	mu    sync.Mutex
	polls []SubscribeRequest
	auth  []string
	snap  []byte
	ver   string
}

func (f *fakeOperator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req SubscribeRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.polls = append(f.polls, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if req.Running == f.ver || (req.Refused != nil && req.Refused.Version == f.ver) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_, _ = w.Write(f.snap)
}

func (f *fakeOperator) lastPoll() (SubscribeRequest, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.polls) == 0 {
		return SubscribeRequest{}, 0
	}
	return f.polls[len(f.polls)-1], len(f.polls)
}

func snapshot(t *testing.T, version string) []byte {
	t.Helper()
	b, err := json.Marshal(Snapshot{Version: version, Namespace: "shop",
		Classifiers: []policy.ClassifierObject{{ObjectMeta: policy.ObjectMeta{Namespace: "shop", Name: "words"},
			Spec: spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{
				Keywords: []spec.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}}},
		Guardrails: []policy.GuardrailObject{}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func startClient(t *testing.T, op *fakeOperator, apply func(*policy.Snapshot) error) (string, *[]error) {
	t.Helper()
	dir := t.TempDir()
	return dir, startClientIn(t, op, dir, apply)
}

// startClientIn runs a client with snapshot directory dir against op until the test ends
// and returns what it reported.
func startClientIn(t *testing.T, op *fakeOperator, dir string, apply func(*policy.Snapshot) error) *[]error {
	t.Helper()
	srv := httptest.NewTLSServer(op)
	t.Cleanup(srv.Close)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []error
	c := &Client{URL: srv.URL, TokenFile: tok, SnapshotDir: dir, HTTPClient: srv.Client(), MinBackoff: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, apply, func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &reported
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAppliedSnapshotIsAckedAndPersisted(t *testing.T) {
	op := &fakeOperator{snap: snapshot(t, "v1"), ver: "v1"}
	var got *policy.Snapshot
	var mu sync.Mutex
	dir, _ := startClient(t, op, func(s *policy.Snapshot) error { mu.Lock(); got = s; mu.Unlock(); return nil })
	waitFor(t, "the ack", func() bool { r, _ := op.lastPoll(); return r.Running == "v1" })
	mu.Lock()
	if got == nil || got.Version != "v1" {
		t.Errorf("applied %+v, want the snapshot with the wire version", got)
	}
	mu.Unlock()
	if op.auth[0] != "Bearer token-1" {
		t.Errorf("Authorization %q: the token file's content, trimmed, is the bearer token", op.auth[0])
	}
	fi, err := os.Stat(filepath.Join(dir, SnapshotFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("persisted snapshot: %v %v", err, fi)
	}
	// A new client on the same directory, with the operator unreachable, enforces it.
	c := &Client{URL: "https://127.0.0.1:1", TokenFile: filepath.Join(dir, "token"), SnapshotDir: dir, CAFile: "/nonexistent"}
	ctx, cancel := context.WithCancel(context.Background())
	applied := make(chan string, 1)
	go c.Run(ctx, func(s *policy.Snapshot) error { applied <- s.Version; return nil }, func(error) {})
	select {
	case v := <-applied:
		if v != "v1" {
			t.Errorf("restarted on %q, want v1", v)
		}
	case <-time.After(5 * time.Second):
		t.Error("the persisted snapshot was not applied with the operator unreachable")
	}
	cancel()
}

func TestRefusedSnapshotIsReportedAndNotAppliedAgain(t *testing.T) {
	op := &fakeOperator{snap: snapshot(t, "v2"), ver: "v2"}
	var calls int
	var mu sync.Mutex
	dir, reported := startClient(t, op, func(*policy.Snapshot) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return errors.New("classifier shop/words: unknown backend")
	})
	waitFor(t, "the refusal", func() bool { r, _ := op.lastPoll(); return r.Refused != nil })
	r, _ := op.lastPoll()
	if r.Refused.Version != "v2" || !strings.Contains(r.Refused.Error, "unknown backend") || r.Running != "" {
		t.Errorf("poll after a refusal %+v", r)
	}
	waitFor(t, "more polls", func() bool { _, n := op.lastPoll(); return n >= 4 })
	mu.Lock()
	if calls != 1 {
		t.Errorf("a refused version was applied %d times; the operator does not push it again", calls)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); !os.IsNotExist(err) {
		t.Errorf("a refused snapshot was persisted: %v", err)
	}
	if len(*reported) == 0 {
		t.Error("the refusal was not reported")
	}
}

func TestCorruptedSnapshotIsRefused(t *testing.T) {
	dir := t.TempDir()
	c := &Client{SnapshotDir: dir}
	raw := snapshot(t, "v3")
	if err := c.persist(raw); err != nil {
		t.Fatal(err)
	}
	if s, err := c.loadPersisted(); err != nil || s.Version != "v3" {
		t.Fatalf("intact snapshot: %v %v", s, err)
	}
	path := filepath.Join(dir, SnapshotFile)
	b, _ := os.ReadFile(path)
	b[strings.Index(string(b), "flamingo")] = 'F'
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := c.loadPersisted(); err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Errorf("a corrupted snapshot loaded: %v %v", s, err)
	}
}
