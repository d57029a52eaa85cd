package clusterguardrail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// baseline creates a ClusterClassifier of built-in keywords (category banned: word) and
// a ClusterGuardrail named name blocking it at Input for the namespaces labelled
// baseline=<name>, and waits until the ClusterGuardrail is Ready.
func baseline(t *testing.T, name, word string) *v1alpha1.ClusterGuardrail {
	t.Helper()
	ctx := context.Background()
	c := &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: name + "-words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
			Keywords: []v1alpha1.KeywordRule{{Category: "banned", Words: []string{word}}}}}}
	must(t, k8s.Create(ctx, c))
	g := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterGuardrailSpec{
			GuardrailSpec: v1alpha1.GuardrailSpec{
				Mode: v1alpha1.ModeEnforce, ClassifierRef: v1alpha1.LocalObjectReference{Name: c.Name},
				Phases: []v1alpha1.Phase{v1alpha1.PhaseInput}, Threshold: ptrTo(v1alpha1.Score(0.5)),
				Action: v1alpha1.ActionBlock, Reason: "Refused by the platform's " + name,
			},
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"baseline": v1alpha1.LabelValue(name)}},
		}}
	must(t, k8s.Create(ctx, g))
	eventually(t, 20*time.Second, func() error {
		cur := &v1alpha1.ClusterGuardrail{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, cur); err != nil {
			return err
		}
		for _, cond := range cur.Status.Conditions {
			if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == cur.Generation {
				return nil
			}
		}
		return fmt.Errorf("ClusterGuardrail %s is not Ready: %+v", name, cur.Status.Conditions)
	})
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), g)
		_ = k8s.Delete(context.Background(), c)
	})
	return g
}

// tenantGuardrail creates, in ns, a Classifier of the same keyword and a Guardrail on it.
func tenantGuardrail(t *testing.T, ns, name, word string, mode v1alpha1.Mode, action v1alpha1.Action, priority int32) {
	t.Helper()
	ctx := context.Background()
	c := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
			Keywords: []v1alpha1.KeywordRule{{Category: "banned", Words: []string{word}}}}}}
	must(t, k8s.Create(ctx, c))
	must(t, k8s.Create(ctx, &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.GuardrailSpec{Mode: mode, ClassifierRef: v1alpha1.LocalObjectReference{Name: c.Name},
			Phases: []v1alpha1.Phase{v1alpha1.PhaseInput}, Threshold: ptrTo(v1alpha1.Score(0.5)), Action: action,
			Reason: "Refused by the tenant's " + name, Priority: ptrTo(priority)}}))
}

func hasGuardrail(key string) func(*cp.Snapshot) bool {
	return func(s *cp.Snapshot) bool {
		for i := range s.Guardrails {
			if s.Guardrails[i].Key() == key {
				return true
			}
		}
		return false
	}
}

// judge compiles a snapshot as the guard does and sends one prompt through the guard's
// engine with built-in backends; it returns the verdict, if any.
func judge(t *testing.T, snap *cp.Snapshot, prompt string) *engine.Verdict {
	t.Helper()
	compiled, err := cp.Compile(snap)
	must(t, err)
	backends := map[string]classify.Classifier{}
	for _, c := range compiled.Classifiers {
		cfg := builtin.Config{Detectors: c.Builtin.Detectors}
		for _, kw := range c.Builtin.Keywords {
			cfg.Keywords = append(cfg.Keywords, builtin.KeywordSet(kw))
		}
		b, err := builtin.New(cfg)
		must(t, err)
		backends[c.Key] = b
	}
	e := engine.New(engine.Config{Guardrails: compiled.Guardrails, Classifiers: compiled.Classifiers, Backends: engine.BackendMap(backends)})
	s := e.NewSession(engine.Options{})
	defer s.End()
	res, err := s.Input(context.Background(), []engine.Message{{Role: engine.RoleUser,
		Parts: []engine.Part{{Modality: classify.Text, Text: prompt}}}})
	must(t, err)
	return res.Stop
}

func TestATenantNamespaceWithoutGuardrailsGetsTheClusterGuardrail(t *testing.T) {
	baseline(t, "no-flamingos", "flamingo")
	ns := tenant(t, map[string]string{"baseline": "no-flamingos"})
	tok := token(t, pod(t, ns, "app-0", "web"))
	snap := subscribe(t, tok, hasGuardrail("/no-flamingos"))
	for _, g := range snap.Guardrails {
		if g.Key() == "/no-flamingos" && g.Kind != policy.KindClusterGuardrail {
			t.Fatalf("the ClusterGuardrail travels as kind %q", g.Kind)
		}
	}
	v := judge(t, snap, "tell me about the flamingo")
	if v == nil || v.Kind != engine.Blocked || v.Guardrail != "/no-flamingos" {
		t.Fatalf("verdict %+v, want the ClusterGuardrail's block", v)
	}
	if v := judge(t, snap, "tell me about the heron"); v != nil {
		t.Fatalf("an unrelated prompt was stopped: %+v", v)
	}

	// A namespace the namespaceSelector does not select gets nothing of it.
	other := tenant(t, map[string]string{"baseline": "something-else"})
	code, body := post(t, token(t, pod(t, other, "app-0", "web")), cp.SubscribePath, cp.SubscribeRequest{})
	if code != http.StatusOK || strings.Contains(string(body), "no-flamingos") {
		t.Fatalf("a namespace the ClusterGuardrail does not select got %d %s", code, body)
	}
}

func TestATenantsGuardrailsDoNotWeakenTheClusterGuardrail(t *testing.T) {
	baseline(t, "no-pelicans", "pelican")
	cases := []struct {
		name     string
		mode     v1alpha1.Mode
		action   v1alpha1.Action
		priority int32
	}{
		{"a Report Guardrail on the same category", v1alpha1.ModeReport, v1alpha1.ActionBlock, 0},
		{"a Warn Guardrail on the same category", v1alpha1.ModeEnforce, v1alpha1.ActionWarn, 0},
		{"a Redact Guardrail that would run first", v1alpha1.ModeEnforce, v1alpha1.ActionRedact, -1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := tenant(t, map[string]string{"baseline": "no-pelicans"})
			tenantGuardrail(t, ns, "mine", "pelican", tc.mode, tc.action, tc.priority)
			tok := token(t, pod(t, ns, "app-0", "web"))
			snap := subscribe(t, tok, func(s *cp.Snapshot) bool {
				return hasGuardrail("/no-pelicans")(s) && hasGuardrail(ns+"/mine")(s)
			})
			v := judge(t, snap, "a pelican flew by")
			if v == nil || v.Kind != engine.Blocked || v.Guardrail != "/no-pelicans" {
				t.Fatalf("verdict %+v, want the ClusterGuardrail's block", v)
			}
		})
	}
}

// A guard's acknowledgement counts into the ClusterGuardrail's status across namespaces,
// and its decisions, reported under /name, into status.decisions and the namespace's
// breakdown.
func TestEnforcementAndDecisionsCountAcrossNamespaces(t *testing.T) {
	g := baseline(t, "no-herons", "heron")
	var toks []string
	var namespaces []string
	for range 2 {
		ns := tenant(t, map[string]string{"baseline": "no-herons"})
		namespaces = append(namespaces, ns)
		toks = append(toks, token(t, pod(t, ns, "app-0", "web")))
	}
	for _, tok := range toks {
		snap := subscribe(t, tok, hasGuardrail("/no-herons"))
		// The guard runs it: its next poll acknowledges the version.
		post(t, tok, cp.SubscribePath, cp.SubscribeRequest{Running: snap.Version}) // records the ack, then waits for a change
	}
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		cur := &v1alpha1.ClusterGuardrail{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: g.Name}, cur); err != nil {
			return err
		}
		if e := cur.Status.Enforcement; e == nil || e.Summary != "2/2" || cur.Status.SelectedNamespaces != 2 || len(cur.Status.Namespaces) != 2 {
			return fmt.Errorf("enforcement %+v, %d namespaces, breakdown %+v", e, cur.Status.SelectedNamespaces, cur.Status.Namespaces)
		}
		return nil
	})
	batch := guardv1.DecisionsRequest{Incarnation: "inc-1", Started: time.Now().Add(-time.Minute).UnixMilli(),
		Guardrails: []guardv1.GuardrailDecisions{{Guardrail: "/no-herons", Counts: []guardv1.DecisionCount{
			{Generation: g.Generation, Phase: "Input", Outcome: "blocked", Category: "banned", Requests: 3}}}}}
	if code, body := post(t, toks[0], guardv1.DecisionsPath, batch); code != http.StatusNoContent {
		t.Fatalf("decisions batch answered %d: %s", code, body)
	}
	eventually(t, 20*time.Second, func() error {
		cur := &v1alpha1.ClusterGuardrail{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: g.Name}, cur); err != nil {
			return err
		}
		if d := cur.Status.Decisions; d == nil || d.Blocked != 3 {
			return fmt.Errorf("decisions %+v", d)
		}
		for _, e := range cur.Status.Namespaces {
			if e.Namespace == namespaces[0] && e.Blocked == 3 {
				return nil
			}
		}
		return fmt.Errorf("the breakdown does not count 3 blocked in %s: %+v", namespaces[0], cur.Status.Namespaces)
	})
}

// A ClusterClassifier's credentials come from the operator's namespace only: a Secret of
// the same name in a tenant's namespace is never read, and the credential reaches the
// guards of the selected namespaces only.
func TestClusterClassifierCredentialsComeFromTheOperatorsNamespace(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t, map[string]string{"baseline": "judged"})
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform-judge"},
		Data: map[string][]byte{"apiKey": []byte("sk-tenant-planted")}}))
	c := &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "platform-judge"},
		Spec: v1alpha1.ClassifierSpec{
			Moderation:           &v1alpha1.ModerationBackend{URL: "https://moderation.example/v1/moderations"},
			Categories:           []v1alpha1.Category{{ID: "violence"}},
			CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "platform-judge", Key: "apiKey"},
		}}
	must(t, k8s.Create(ctx, c))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
	eventually(t, 20*time.Second, func() error {
		cur := &v1alpha1.ClusterClassifier{}
		must(t, k8s.Get(ctx, types.NamespacedName{Name: c.Name}, cur))
		for _, cond := range cur.Status.Conditions {
			if cond.Type == v1alpha1.ConditionCredentialsResolved && cond.Reason == v1alpha1.ReasonSecretNotFound &&
				strings.Contains(cond.Message, "namespace "+operatorNS) {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v, want SecretNotFound in namespace %s", cur.Status.Conditions, operatorNS)
	})
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "platform-judge"},
		Data: map[string][]byte{"apiKey": []byte(canary)}}))
	g := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "judged"},
		Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{
			Mode: v1alpha1.ModeReport, ClassifierRef: v1alpha1.LocalObjectReference{Name: c.Name},
			Threshold: ptrTo(v1alpha1.Score(0.5)), Action: v1alpha1.ActionBlock, Reason: "Violent",
		}, NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"baseline": "judged"}}}}
	must(t, k8s.Create(ctx, g))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), g) })
	snap := subscribe(t, token(t, pod(t, ns, "app-0", "web")), hasGuardrail("/judged"))
	if snap.Credentials["/platform-judge"] != canary {
		t.Fatalf("the snapshot's credential of /platform-judge is not the operator namespace's Secret")
	}
	// A rotation of that Secret is pushed.
	s := &corev1.Secret{}
	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: operatorNS, Name: "platform-judge"}, s))
	s.Data["apiKey"] = []byte(canary + "-rotated")
	must(t, k8s.Update(ctx, s))
	if next := nextSnapshot(t, token(t, pod(t, ns, "app-1", "web")), snap.Version); next.Credentials["/platform-judge"] != canary+"-rotated" {
		t.Fatal("the rotated credential was not pushed")
	}
	other := tenant(t, nil)
	_, body := post(t, token(t, pod(t, other, "app-0", "web")), cp.SubscribePath, cp.SubscribeRequest{})
	if strings.Contains(string(body), canary) {
		t.Fatal("a namespace the ClusterGuardrail does not select received the ClusterClassifier's credential")
	}
}

// nextSnapshot long-polls as a guard running version does until the control plane pushes
// another one, and returns it.
func nextSnapshot(t *testing.T, tok, version string) *cp.Snapshot {
	t.Helper()
	var snap *cp.Snapshot
	eventually(t, 15*time.Second, func() error {
		code, body := post(t, tok, cp.SubscribePath, cp.SubscribeRequest{Running: version})
		if code != http.StatusOK {
			return fmt.Errorf("no new snapshot (answer %d)", code)
		}
		snap = &cp.Snapshot{}
		return json.Unmarshal(body, snap)
	})
	return snap
}

// What a snapshot of a pod is made of beyond its namespace re-pushes it: its namespace's
// labels (the namespaceSelector), a ClusterGuardrail's spec, a ClusterClassifier's, and a
// rotation of its Secret in the operator's namespace.
func TestClusterChangesRePushTheSnapshot(t *testing.T) {
	ctx := context.Background()
	g := baseline(t, "no-storks", "stork")
	ns := tenant(t, map[string]string{"baseline": "not-yet"})
	tok := token(t, pod(t, ns, "app-0", "web"))
	snap := subscribe(t, tok, func(s *cp.Snapshot) bool { return !hasGuardrail("/no-storks")(s) })

	t.Run("labelling the namespace brings the ClusterGuardrail", func(t *testing.T) {
		n := &corev1.Namespace{}
		must(t, k8s.Get(ctx, types.NamespacedName{Name: ns}, n))
		n.Labels["baseline"] = "no-storks"
		must(t, k8s.Update(ctx, n))
		snap = nextSnapshot(t, tok, snap.Version)
		if !hasGuardrail("/no-storks")(snap) {
			t.Fatal("the pushed snapshot does not hold the ClusterGuardrail")
		}
	})
	t.Run("an edit of the ClusterGuardrail is pushed", func(t *testing.T) {
		cur := &v1alpha1.ClusterGuardrail{}
		must(t, k8s.Get(ctx, types.NamespacedName{Name: g.Name}, cur))
		cur.Spec.Reason = "Storks are not discussed here"
		must(t, k8s.Update(ctx, cur))
		snap = nextSnapshot(t, tok, snap.Version)
		for _, x := range snap.Guardrails {
			if x.Key() == "/no-storks" && x.Spec.Reason != "Storks are not discussed here" {
				t.Fatalf("the pushed ClusterGuardrail says %q", x.Spec.Reason)
			}
		}
	})
	t.Run("an edit of the ClusterClassifier is pushed", func(t *testing.T) {
		c := &v1alpha1.ClusterClassifier{}
		must(t, k8s.Get(ctx, types.NamespacedName{Name: "no-storks-words"}, c))
		c.Spec.Builtin.Keywords[0].Words = append(c.Spec.Builtin.Keywords[0].Words, "crane")
		must(t, k8s.Update(ctx, c))
		snap = nextSnapshot(t, tok, snap.Version)
		if v := judge(t, snap, "a crane"); v == nil || v.Guardrail != "/no-storks" {
			t.Fatalf("after the ClusterClassifier's edit, a crane: %+v", v)
		}
	})
	t.Run("relabelling the namespace takes it away", func(t *testing.T) {
		n := &corev1.Namespace{}
		must(t, k8s.Get(ctx, types.NamespacedName{Name: ns}, n))
		n.Labels["baseline"] = "elsewhere"
		must(t, k8s.Update(ctx, n))
		snap = nextSnapshot(t, tok, snap.Version)
		if hasGuardrail("/no-storks")(snap) {
			t.Fatal("the namespace no longer selected still gets the ClusterGuardrail")
		}
	})
}
