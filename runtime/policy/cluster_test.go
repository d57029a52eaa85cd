package policy

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

func clusterScoped(o *ClassifierObject) { o.Kind, o.Namespace = KindClusterClassifier, "" }

func clusterGuardrail(o *GuardrailObject) { o.Kind, o.Namespace = KindClusterGuardrail, "" }

func TestCompileClusterObjects(t *testing.T) {
	t.Run("a ClusterGuardrail resolves a ClusterClassifier and a Guardrail of the same name stays apart", func(t *testing.T) {
		snap, err := Compile(Sources{
			Classifiers: []ClassifierObject{classifierObj("pii", clusterScoped), classifierObj("pii")},
			Guardrails:  []GuardrailObject{guardrailObj("pii", "pii", clusterGuardrail), guardrailObj("pii", "pii")},
		})
		if err != nil {
			t.Fatal(err)
		}
		keys := []string{snap.Guardrails[0].Key, snap.Guardrails[1].Key}
		if !slices.Equal(keys, []string{"/pii", "ns/pii"}) || !snap.Guardrails[0].Cluster || snap.Guardrails[1].Cluster {
			t.Fatalf("keys %v, cluster %v %v", keys, snap.Guardrails[0].Cluster, snap.Guardrails[1].Cluster)
		}
		if snap.Guardrails[0].Classifier != "/pii" || snap.Guardrails[1].Classifier != "ns/pii" {
			t.Fatalf("classifiers %s and %s", snap.Guardrails[0].Classifier, snap.Guardrails[1].Classifier)
		}
	})
	t.Run("a Guardrail cannot reference a ClusterClassifier", func(t *testing.T) {
		_, err := Compile(Sources{
			Classifiers: []ClassifierObject{classifierObj("shared", clusterScoped)},
			Guardrails:  []GuardrailObject{guardrailObj("mine", "shared")},
		})
		var errs Errors
		if !errors.As(err, &errs) || errs[0].Reason != spec.ReasonClassifierNotFound {
			t.Fatalf("err %v, want ClassifierNotFound", err)
		}
	})
	t.Run("a ClusterGuardrail cannot reference a namespace's Classifier", func(t *testing.T) {
		_, err := Compile(Sources{
			Classifiers: []ClassifierObject{classifierObj("tenant")},
			Guardrails:  []GuardrailObject{guardrailObj("base", "tenant", clusterGuardrail)},
		})
		var errs Errors
		if !errors.As(err, &errs) || errs[0].Reason != spec.ReasonClassifierNotFound || errs[0].Key != "/base" {
			t.Fatalf("err %v, want ClassifierNotFound for /base", err)
		}
	})
	t.Run("a cluster object with a namespace is refused naming metadata.namespace", func(t *testing.T) {
		_, err := Compile(Sources{
			Classifiers: []ClassifierObject{classifierObj("pii", func(o *ClassifierObject) { o.Kind = KindClusterClassifier })},
			Guardrails:  []GuardrailObject{guardrailObj("base", "pii", func(o *GuardrailObject) { o.Kind = KindClusterGuardrail })},
		})
		if err == nil || !strings.Contains(err.Error(), "metadata.namespace") {
			t.Fatalf("err %v, want one naming metadata.namespace", err)
		}
	})
}

// randomCompiled draws a compiled guardrail: scope, mode, action, categories, phases and
// failure policy.
func randomCompiled(r *rand.Rand, i int) *Guardrail {
	actions := []Action{ActionBlock, ActionStrip, ActionRedact, ActionWarn, ActionPseudonymize}
	g := &Guardrail{Name: string(rune('a' + i)), Cluster: r.IntN(2) == 0, Action: actions[r.IntN(len(actions))],
		Priority: int32(r.IntN(3)), FailOpen: r.IntN(2) == 0}
	g.Key = "team/" + g.Name
	if g.Cluster {
		g.Key = "/" + g.Name
	}
	if r.IntN(3) == 0 {
		g.Mode = ModeReport
	}
	for p := PhaseInput; p <= PhaseToolResults; p++ {
		if r.IntN(2) == 0 {
			g.Phases = g.Phases.With(p)
		}
	}
	for j, id := range []string{"email", "secret", "card"} {
		if r.IntN(2) == 0 {
			g.Categories = append(g.Categories, CategoryRule{Index: j, ID: id, Threshold: 0.5})
		}
	}
	return g
}

// Compose over random sets: adding guardrails never lowers the strongest action on a
// category nor turns a fail-closed phase open; adding Report guardrails changes no
// enforced action; the cluster tier comes first in the order.
func TestComposeNeverWeakens(t *testing.T) {
	byPhase := func(es []Effective) map[Phase]Effective {
		m := map[Phase]Effective{}
		for _, e := range es {
			m[e.Phase] = e
		}
		return m
	}
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 9))
		var base, more []*Guardrail
		for i := range 1 + r.IntN(4) {
			base = append(base, randomCompiled(r, i))
		}
		more = slices.Clone(base)
		for i := range r.IntN(4) {
			more = append(more, randomCompiled(r, 10+i))
		}
		before, after := byPhase(Compose(base)), byPhase(Compose(more))
		for p, b := range before {
			a := after[p]
			if b.Action.Stronger(a.Action) {
				t.Fatalf("seed %d: phase %s: %s weakened to %s", seed, p, b.Action, a.Action)
			}
			if b.FailClosed && !a.FailClosed {
				t.Fatalf("seed %d: phase %s: fail-closed turned open", seed, p)
			}
			for id, c := range b.Categories {
				if c.Action.Stronger(a.Categories[id].Action) {
					t.Fatalf("seed %d: phase %s, category %s: %s weakened to %s", seed, p, id, c.Action, a.Categories[id].Action)
				}
			}
			seenNamespaced := false
			for _, key := range a.Order {
				cluster := key[0] == '/'
				if cluster && seenNamespaced {
					t.Fatalf("seed %d: phase %s: order %v puts a ClusterGuardrail after a namespace's", seed, p, a.Order)
				}
				seenNamespaced = seenNamespaced || !cluster
			}
		}
		reported := slices.Clone(base)
		for i := range 1 + r.IntN(3) {
			g := randomCompiled(r, 20+i)
			g.Mode = ModeReport
			reported = append(reported, g)
		}
		for p, e := range byPhase(Compose(reported)) {
			if b := before[p]; e.Action != b.Action || len(e.Categories) != len(b.Categories) {
				t.Fatalf("seed %d: phase %s: Report guardrails changed the enforced action %s to %s", seed, p, b.Action, e.Action)
			}
		}
	}
}
