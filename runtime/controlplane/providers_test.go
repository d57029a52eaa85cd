package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

const providerCredential = "sk-canary-provider-credential-5d1e"

// snapshotWithProvider is snapshot with one OpenAI ModelProvider and its credential.
func snapshotWithProvider(t *testing.T, version string) []byte {
	t.Helper()
	var s Snapshot
	if err := json.Unmarshal(snapshot(t, version), &s); err != nil {
		t.Fatal(err)
	}
	s.Providers = []Provider{{Name: "openai-prod", API: guardv1.ProviderAPIOpenAI, URL: "https://llm.example/v1",
		Headers: map[string]string{"OpenAI-Organization": "org-1"}, Credential: providerCredential}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// applied records the snapshots a client applied.
type applied struct {
	mu    sync.Mutex
	snaps []*policy.Snapshot
}

func (a *applied) apply(s *policy.Snapshot) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.snaps = append(a.snaps, s)
	return nil
}

func (a *applied) all() []*policy.Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*policy.Snapshot(nil), a.snaps...)
}

func TestTheGuardAppliesAProvidersCredentialButPersistsTheSnapshotWithoutIt(t *testing.T) {
	op := &fakeOperator{snap: snapshotWithProvider(t, "v1"), ver: "v1"}
	var got applied
	dir, _ := startClient(t, op, got.apply)
	waitFor(t, "the ack", func() bool { r, _ := op.lastPoll(); return r.Running == "v1" })
	snaps := got.all()
	if len(snaps) != 1 || len(snaps[0].Providers) != 1 {
		t.Fatalf("applied %d snapshots, want one with one provider", len(snaps))
	}
	p := snaps[0].Providers[0]
	if p.Name != "openai-prod" || p.Family != policy.ProviderOpenAI || p.URL.Host != "llm.example" ||
		p.Headers["OpenAI-Organization"] != "org-1" || string(p.Credential) != providerCredential {
		t.Errorf("applied provider %s %v %v %v, credential set: %v", p.Name, p.Family, p.URL, p.Headers, p.Credential != "")
	}
	b, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), providerCredential) || strings.Contains(string(b), `"credential"`) {
		t.Errorf("the snapshot on disk holds the provider's credential:\n%s", b)
	}
	if !strings.Contains(string(b), "openai-prod") || !strings.Contains(string(b), "llm.example") ||
		!strings.Contains(string(b), "flamingo") {
		t.Errorf("the snapshot on disk lost more than the credential:\n%s", b)
	}
}

func TestARestartedGuardEnforcesThePersistedSnapshotAndAsksTheOperatorForTheCredentials(t *testing.T) {
	dir := t.TempDir()
	if err := (&Client{SnapshotDir: dir}).persist(snapshotWithProvider(t, "v1")); err != nil {
		t.Fatal(err)
	}

	// The operator down: the persisted policy is enforced, its provider without a credential.
	down := &Client{URL: "https://127.0.0.1:1", TokenFile: filepath.Join(dir, "token"), SnapshotDir: dir, CAFile: "/nonexistent"}
	var offline applied
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); down.Run(ctx, offline.apply, func(error) {}) }()
	waitFor(t, "the persisted snapshot", func() bool { return len(offline.all()) == 1 })
	cancel()
	<-done
	s := offline.all()[0]
	if s.Version != "v1" || len(s.Providers) != 1 || s.Providers[0].Name != "openai-prod" || s.Providers[0].Credential != "" {
		t.Fatalf("persisted snapshot applied as %s with %d providers", s.Version, len(s.Providers))
	}

	// The operator back: the guard does not claim v1 (which would get it nothing new), so
	// the operator pushes v1 again, credential included.
	op := &fakeOperator{snap: snapshotWithProvider(t, "v1"), ver: "v1"}
	var online applied
	startClientIn(t, op, dir, online.apply)
	waitFor(t, "the pushed snapshot", func() bool { return len(online.all()) == 2 })
	op.mu.Lock()
	first := op.polls[0]
	op.mu.Unlock()
	if first.Running != "" {
		t.Errorf("first poll claims %q running: the operator would never send the credential", first.Running)
	}
	if p := online.all()[1].Providers[0]; string(p.Credential) != providerCredential {
		t.Error("the pushed snapshot's provider has no credential")
	}
	waitFor(t, "the ack", func() bool { r, _ := op.lastPoll(); return r.Running == "v1" })
}

func TestASnapshotWithAProviderTheGuardCannotUseIsRefused(t *testing.T) {
	for name, p := range map[string]Provider{
		"an unknown API":    {Name: "p", API: "Gemini", URL: "https://llm.example"},
		"a relative URL":    {Name: "p", API: guardv1.ProviderAPIOpenAI, URL: "/v1"},
		"a non-HTTP scheme": {Name: "p", API: guardv1.ProviderAPIAnthropic, URL: "file:///etc/passwd"},
		"no name":           {API: guardv1.ProviderAPIOpenAI, URL: "https://llm.example"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(&Snapshot{Version: "v1", Namespace: "shop", Providers: []Provider{p}})
			if err == nil {
				t.Fatal("compiled")
			}
		})
	}
}

func TestTheDecisionsBatchCarriesEachProvidersCumulativeUsage(t *testing.T) {
	tel := telemetry.New(nil)
	a := NewAggregator()
	tel.OnProviderUsage(a.ProviderUsed)
	tel.ProviderRequest("openai-prod")
	tel.ProviderTokens("openai-prod", 12, 30)
	tel.ProviderRequest("openai-prod")
	tel.ProviderTokens("openai-prod", 8, 5)
	tel.ProviderRequest("claude")
	first, v1 := a.Batch()
	want := []guardv1.ProviderUsage{{Provider: "claude", Requests: 1}, {Provider: "openai-prod", Requests: 2, InputTokens: 20, OutputTokens: 35}}
	if len(first.Providers) != 2 || first.Providers[0] != want[0] || first.Providers[1] != want[1] {
		t.Fatalf("providers %+v, want %+v", first.Providers, want)
	}
	tel.ProviderRequest("claude")
	second, v2 := a.Batch()
	if v2 == v1 || second.Providers[0].Requests != 2 || second.Providers[1] != want[1] {
		t.Errorf("after one more call: %+v (version moved: %v), want cumulative counts", second.Providers, v2 != v1)
	}
	for i := range 2 * guardv1.MaxProviders {
		tel.ProviderRequest(fmt.Sprint("p", i))
	}
	if third, _ := a.Batch(); len(third.Providers) != guardv1.MaxProviders {
		t.Errorf("%d providers in a batch, want at most %d", len(third.Providers), guardv1.MaxProviders)
	}
}
