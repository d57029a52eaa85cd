package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Cluster baselines: every ClusterGuardrail and namespaced Guardrail
// selecting a pod applies, and a tenant's Guardrails add restrictions but never weaken a
// cluster one. The properties below run random sets of cluster guardrails C and tenant
// guardrails T over random requests and answers and compare the engine of C alone with
// the engine of C ∪ T:
//
//   - what C stops (a block, or a failure under failurePolicy Closed), C ∪ T stops;
//   - a value C keeps from the provider or the client (redacted, stripped, pseudonymized)
//     C ∪ T keeps from them too;
//   - tenant guardrails that only report change nothing of what C does, but for their
//     own evaluation failures under failurePolicy Closed, which refuse the content in
//     either mode: a restriction added, never one taken away.

// entities are the values the fake detectors find; category i of a classifier matches
// entities[i].
var entities = []string{"alpha", "bravo", "charlie"}

var entityCategories = []string{"cat-one", "cat-two", "cat-three"}

// clusterWorld is a world with a cluster classifier "/words" and a tenant classifier
// "team/words", both span-capable detectors of entities, and a tenant judge that fails
// every evaluation ("team/broken").
type clusterWorld struct {
	*world
	clusterWords, tenantWords, broken *policy.Classifier
}

func newClusterWorld() *clusterWorld {
	w := &world{}
	cw := &clusterWorld{world: w}
	cw.tenantWords = w.classifier("words", words(entities...), withCategories(entityCategories...), withSpans(len("charlie")))
	cw.clusterWords = w.classifier("cluster-words", words(entities...), withCategories(entityCategories...), withSpans(len("charlie")))
	cw.clusterWords.Key, cw.clusterWords.Namespace, cw.clusterWords.Name = "/words", "", "words"
	w.backends["/words"] = w.backends["team/cluster-words"]
	delete(w.backends, "team/cluster-words")
	failing := &fake{answer: func(context.Context, classify.Input) (classify.Result, error) {
		return classify.Result{}, errors.New("backend down")
	}}
	cw.broken = w.classifier("broken", failing, withCategories(entityCategories...))
	return cw
}

// clusterGuardrail makes g a ClusterGuardrail on the cluster classifier.
func (cw *clusterWorld) clusterGuardrail(name string, opts ...guardrailOption) *policy.Guardrail {
	g := cw.guardrail(name, cw.clusterWords, opts...)
	g.Key, g.Namespace, g.Cluster, g.Classifier = "/"+name, "", true, cw.clusterWords.Key
	return g
}

// randomGuardrail draws a guardrail's options: an action on a random subset of the
// categories, a mode, a priority, a failure policy, phases Input and Output.
func randomGuardrail(r *rand.Rand) []guardrailOption {
	actions := []policy.Action{policy.ActionBlock, policy.ActionStrip, policy.ActionRedact, policy.ActionWarn, policy.ActionPseudonymize}
	a := actions[r.IntN(len(actions))]
	var only []string
	for _, c := range entityCategories {
		if r.IntN(2) == 0 {
			only = append(only, c)
		}
	}
	if len(only) == 0 {
		only = entityCategories[:1]
	}
	opts := []guardrailOption{threshold(0.5, a, nil, only...), priority(int32(r.IntN(5) - 2))}
	if a == policy.ActionPseudonymize {
		opts = append(opts, phases(policy.PhaseInput))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, reportMode())
	}
	if r.IntN(3) == 0 {
		opts = append(opts, failOpen())
	}
	if r.IntN(2) == 0 {
		opts = append(opts, allMessages())
	}
	return opts
}

// randomText is a few words, entities among them.
func randomText(r *rand.Rand) string {
	fill := []string{"the", "plan", "is", "ready", "see", "notes"}
	var b []string
	for range 2 + r.IntN(6) {
		if r.IntN(3) == 0 {
			b = append(b, entities[r.IntN(len(entities))])
		} else {
			b = append(b, fill[r.IntN(len(fill))])
		}
	}
	return strings.Join(b, " ")
}

// policySet is the drawn guardrails: cluster ones and tenant ones, with whether each
// tenant one uses the failing judge.
type policySet struct {
	cluster, tenant [][]guardrailOption
	tenantBroken    []bool
}

func drawPolicies(r *rand.Rand) policySet {
	var ps policySet
	for range 1 + r.IntN(3) {
		ps.cluster = append(ps.cluster, randomGuardrail(r))
	}
	for range r.IntN(4) {
		ps.tenant = append(ps.tenant, randomGuardrail(r))
		ps.tenantBroken = append(ps.tenantBroken, r.IntN(6) == 0)
	}
	return ps
}

// build returns the engine of the cluster guardrails, with the tenant ones when withTenant;
// reportOnly turns every tenant guardrail to Report mode.
func (ps policySet) build(withTenant, reportOnly bool) *Engine {
	cw := newClusterWorld()
	for i, opts := range ps.cluster {
		cw.clusterGuardrail(fmt.Sprintf("base-%d", i), opts...)
	}
	if withTenant {
		for i, opts := range ps.tenant {
			c := cw.tenantWords
			if ps.tenantBroken[i] {
				c = cw.broken
			}
			if reportOnly {
				opts = append(slices.Clone(opts), reportMode())
			}
			cw.guardrail(fmt.Sprintf("tenant-%d", i), c, opts...)
		}
	}
	return cw.engine()
}

// forwarded is the text a result lets through: the parts not dropped, or nothing when it
// stopped.
func forwarded(res InputResult) string {
	var b strings.Builder
	for _, m := range res.Messages {
		if m.Dropped {
			continue
		}
		for _, p := range m.Parts {
			if !p.Dropped {
				b.WriteString(p.Text + "\n")
			}
		}
	}
	return b.String()
}

func released(res OutputResult) string {
	var b strings.Builder
	for _, c := range res.Contents {
		if !c.Dropped {
			b.WriteString(c.Text + "\n")
		}
	}
	return b.String()
}

// tenantFailure reports whether v is a tenant guardrail's evaluation failure.
func tenantFailure(v *Verdict) bool {
	return v != nil && v.Kind == Failed && strings.HasPrefix(v.Guardrail, "team/")
}

func TestTenantGuardrailsNeverWeakenClusterGuardrailsAtInput(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 33))
		ps := drawPolicies(r)
		var msgs []Message
		for range 1 + r.IntN(3) {
			msgs = append(msgs, user(randomText(r)))
		}
		run := func(e *Engine) InputResult {
			s := e.NewSession(Options{})
			defer s.End()
			res, err := s.Input(context.Background(), slices.Clone(msgs))
			if err != nil {
				t.Fatalf("seed %d: Input: %v", seed, err)
			}
			return res
		}
		base, both, reported := run(ps.build(false, false)), run(ps.build(true, false)), run(ps.build(true, true))
		if base.Stop != nil && both.Stop == nil {
			t.Fatalf("seed %d: the cluster guardrails alone stop the request (%s by %s), with the tenant's they let it through",
				seed, base.Stop.Kind, base.Stop.Guardrail)
		}
		if base.Stop == nil && both.Stop == nil {
			for _, v := range entities {
				if !strings.Contains(forwarded(base), v) && strings.Contains(forwarded(both), v) {
					t.Fatalf("seed %d: the cluster guardrails keep %q from the provider, with the tenant's it is sent:\n%q\n%q",
						seed, v, forwarded(base), forwarded(both))
				}
			}
		}
		if tenantFailure(reported.Stop) {
			continue // a Report guardrail's failure is governed by its failurePolicy: a restriction added
		}
		if (base.Stop == nil) != (reported.Stop == nil) || forwarded(base) != forwarded(reported) {
			t.Fatalf("seed %d: tenant guardrails in Report mode changed the cluster's decision: %+v %q vs %+v %q",
				seed, base.Stop, forwarded(base), reported.Stop, forwarded(reported))
		}
	}
}

func TestTenantGuardrailsNeverWeakenClusterGuardrailsAtOutput(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 34))
		ps := drawPolicies(r)
		contents := []Content{{Channel: content.Channel{Kind: content.Text}, Text: randomText(r)},
			{Channel: content.Channel{Kind: content.Reasoning}, Text: randomText(r)}}
		run := func(e *Engine) OutputResult {
			s := e.NewSession(Options{})
			defer s.End()
			res, err := s.Output(context.Background(), slices.Clone(contents))
			if err != nil {
				t.Fatalf("seed %d: Output: %v", seed, err)
			}
			return res
		}
		base, both, reported := run(ps.build(false, false)), run(ps.build(true, false)), run(ps.build(true, true))
		if base.Stop != nil && both.Stop == nil {
			t.Fatalf("seed %d: the cluster guardrails alone stop the answer (%s by %s), with the tenant's it is released",
				seed, base.Stop.Kind, base.Stop.Guardrail)
		}
		if base.Stop == nil && both.Stop == nil {
			for _, v := range entities {
				if !strings.Contains(released(base), v) && strings.Contains(released(both), v) {
					t.Fatalf("seed %d: the cluster guardrails keep %q from the client, with the tenant's it is released", seed, v)
				}
			}
		}
		if tenantFailure(reported.Stop) {
			continue
		}
		if (base.Stop == nil) != (reported.Stop == nil) || released(base) != released(reported) {
			t.Fatalf("seed %d: tenant guardrails in Report mode changed the cluster's decision", seed)
		}
	}
}

// The cases the properties are about, spelled out: each would weaken the cluster
// guardrail if the tenant's ran first or replaced it.
func TestClusterGuardrailWinsOverTenantGuardrailOnTheSameContent(t *testing.T) {
	cases := []struct {
		name   string
		tenant []guardrailOption
	}{
		{"a tenant's Report guardrail on the same category", []guardrailOption{threshold(0.5, policy.ActionBlock, nil), reportMode()}},
		{"a tenant's Warn on the same category", []guardrailOption{threshold(0.5, policy.ActionWarn, nil)}},
		{"a tenant's Redact that would run first by priority", []guardrailOption{threshold(0.5, policy.ActionRedact, nil), priority(-1000)}},
		{"a tenant's Pseudonymize of the same values", []guardrailOption{threshold(0.5, policy.ActionPseudonymize, nil), phases(policy.PhaseInput), priority(-1000)}},
		{"a tenant's Strip that would drop the message first", []guardrailOption{threshold(0.5, policy.ActionStrip, nil), priority(-1000)}},
		{"a tenant's failing judge with failurePolicy Open", []guardrailOption{threshold(0.5, policy.ActionBlock, nil), failOpen()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cw := newClusterWorld()
			cw.clusterGuardrail("no-alpha", threshold(0.5, policy.ActionBlock, nil, "cat-one"))
			c := cw.tenantWords
			if strings.Contains(tc.name, "failing") {
				c = cw.broken
			}
			cw.guardrail("tenant", c, tc.tenant...)
			s := cw.engine().NewSession(Options{})
			defer s.End()
			res, err := s.Input(context.Background(), []Message{user("hello"), user("send alpha now")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop == nil || res.Stop.Kind != Blocked || res.Stop.Guardrail != "/no-alpha" {
				t.Fatalf("verdict %+v, want the ClusterGuardrail's block", res.Stop)
			}
		})
	}
}

// A cluster guardrail that fails closed refuses the request even when a tenant guardrail
// judging the same content fails open: failure policies combine fail-closed.
func TestClusterFailClosedWinsOverTenantFailOpen(t *testing.T) {
	cw := newClusterWorld()
	g := cw.guardrail("base", cw.broken, threshold(0.5, policy.ActionBlock, nil))
	g.Key, g.Namespace, g.Cluster = "/base", "", true
	cw.guardrail("tenant", cw.broken, threshold(0.5, policy.ActionBlock, nil), failOpen())
	s := cw.engine().NewSession(Options{})
	res, err := s.Input(context.Background(), []Message{user("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Stop.Kind != Failed || res.Stop.Guardrail != "/base" {
		t.Fatalf("verdict %+v, want the ClusterGuardrail's failure", res.Stop)
	}
}

// In a stream, what a cluster guardrail enforces on (Block, Strip or Redact in Enforce
// mode) never reaches the client, whatever the tenant's guardrails do to the stream
// around it: every guardrail judges every delta, the hold-back follows pending matches,
// and deltas are 1 to 8 characters. (A tenant's Strip may end a stream's text where the
// cluster guardrail alone would have blocked it — the text never reaches the client either
// way — so this property is about what is released, not about the verdict. It holds by
// the engine's streaming rules as much as by the tiers: a span-capable classifier judges
// the upstream text, with strips applied and redactions not.)
func TestTenantGuardrailsNeverLeakWhatClusterGuardrailsStopInAStream(t *testing.T) {
	for seed := range uint64(1500) {
		r := rand.New(rand.NewPCG(seed, 35))
		cw := newClusterWorld()
		streamOpts := func() []guardrailOption {
			actions := []policy.Action{policy.ActionBlock, policy.ActionStrip, policy.ActionRedact, policy.ActionWarn}
			a := actions[r.IntN(len(actions))]
			cat := entityCategories[r.IntN(len(entityCategories))]
			opts := []guardrailOption{threshold(0.5, a, nil, cat), phases(policy.PhaseStream, policy.PhaseOutput),
				streaming(policy.Streaming{HoldBack: policy.HoldBackPending}), priority(int32(r.IntN(5) - 2))}
			if r.IntN(3) == 0 {
				opts = append(opts, reportMode())
			}
			return opts
		}
		protected := map[string]bool{}
		for i := range 1 + r.IntN(2) {
			g := cw.clusterGuardrail(fmt.Sprintf("base-%d", i), streamOpts()...)
			if g.Mode == policy.ModeEnforce && g.Action != policy.ActionWarn {
				for _, c := range g.Categories {
					protected[entities[c.Index]] = true
				}
			}
		}
		for i := range r.IntN(4) {
			cw.guardrail(fmt.Sprintf("tenant-%d", i), cw.tenantWords, streamOpts()...)
		}
		text := randomText(r) + " " + randomText(r)
		sizes := []int{1 + r.IntN(8), 1 + r.IntN(8), 1 + r.IntN(8)}
		s := cw.engine().NewSession(Options{})
		out, _ := stream(t, s, text0, text, sizes...)
		s.End()
		for v := range protected {
			if strings.Contains(out, v) {
				t.Fatalf("seed %d: %q, which a ClusterGuardrail enforces on, reached the client: %q (stream %q, deltas %v)", seed, v, out, text, sizes)
			}
		}
	}
}
