package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func TestSnapshotHoldsThePodsGuardrailsAndOnlyItsCredentials(t *testing.T) {
	a, b := fixture(t), fixture(t)
	pa := pod(t, a, "web-1", "web")
	status, body := waitSnapshot(t, token(t, pa, guardv1.Audience))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var s cp.Snapshot
	must(t, json.Unmarshal(body, &s))
	var names []string
	for _, g := range s.Guardrails {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "web-judge,web-words" {
		t.Errorf("a pod labelled app=web got Guardrails %v, want web-judge and web-words", names)
	}
	if s.Credentials[policy.Key(a, "judge")] != canary+"-"+a {
		t.Errorf("the snapshot lacks its namespace's classifier credential")
	}
	if bytes.Contains(body, []byte(canary+"-"+b)) || bytes.Contains(body, []byte(b)) {
		t.Errorf("a snapshot for namespace %s holds something of namespace %s", a, b)
	}
	if _, err := cp.Compile(&s); err != nil {
		t.Errorf("the guard cannot compile the snapshot: %v", err)
	}
}

// waitSnapshot polls until the Guardrails' classifiers are Ready enough to compile.
func waitSnapshot(t *testing.T, tok string) (int, []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := poll(t, tok, cp.SubscribeRequest{})
		if status != http.StatusOK {
			return status, body
		}
		var s cp.Snapshot
		must(t, json.Unmarshal(body, &s))
		if len(s.Guardrails) >= 2 || time.Now().After(deadline) {
			return status, body
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTokensThatAreNotAPodsOwnAreRefused(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	ctx := context.Background()

	t.Run("no token", func(t *testing.T) {
		if status, _ := poll(t, "", cp.SubscribeRequest{}); status != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", status)
		}
	})
	t.Run("a token for another audience", func(t *testing.T) {
		if status, body := poll(t, token(t, p, "https://kubernetes.default.svc"), cp.SubscribeRequest{}); status != http.StatusUnauthorized {
			t.Errorf("status %d (%s), want 401", status, body)
		}
	})
	t.Run("a token not bound to a pod", func(t *testing.T) {
		exp := int64(600)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		must(t, err)
		if status, body := poll(t, tr.Status.Token, cp.SubscribeRequest{}); status != http.StatusForbidden {
			t.Errorf("status %d (%s), want 403", status, body)
		}
	})
	t.Run("a token of a deleted pod, even once reviewed and cached", func(t *testing.T) {
		gone := pod(t, ns, "web-gone", "web")
		tok := token(t, gone, guardv1.Audience)
		if status, body := poll(t, tok, cp.SubscribeRequest{}); status != http.StatusOK {
			t.Fatalf("before deletion: status %d (%s)", status, body)
		}
		must(t, k8s.Delete(ctx, gone, client.GracePeriodSeconds(0)))
		waitGone(t, gone)
		status, body := poll(t, tok, cp.SubscribeRequest{})
		if status != http.StatusUnauthorized && status != http.StatusForbidden {
			t.Errorf("status %d (%s), want 401 or 403", status, body)
		}
	})
	t.Run("a token of a pod of another namespace never yields this namespace", func(t *testing.T) {
		other := fixture(t)
		po := pod(t, other, "web-1", "web")
		_, body := waitSnapshot(t, token(t, po, guardv1.Audience))
		if bytes.Contains(body, []byte(ns)) || bytes.Contains(body, []byte(canary+"-"+ns)) {
			t.Errorf("namespace %s's guard received namespace %s's policy", other, ns)
		}
	})
}

func waitGone(t *testing.T, p *corev1.Pod) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s not deleted", p.Name)
}

// TestGuardFollowsAppliesAndAcksIntoStatus runs the real guard client: it receives the
// policy, acks it, the Guardrail shows 1/1; an edit reaches it and is acked again.
func TestGuardFollowsAppliesAndAcksIntoStatus(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(token(t, p, guardv1.Audience)), 0o600))
	applied := make(chan *policy.Snapshot, 16)
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile, SnapshotDir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, func(s *policy.Snapshot) error { applied <- s; return nil }, func(error) {})

	await := func(what string, ok func(*policy.Snapshot) bool) *policy.Snapshot {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case s := <-applied:
				if ok(s) {
					return s
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	await("both web Guardrails", func(s *policy.Snapshot) bool { return len(s.Guardrails) == 2 })
	waitEnforced(t, ns, "web-words", "1/1")
	for _, name := range []string{"words", "judge"} {
		deadline := time.Now().Add(20 * time.Second)
		for cl := (&v1alpha1.Classifier{}); ; time.Sleep(100 * time.Millisecond) {
			must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cl))
			if cl.Status.Guards == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Classifier %s: status.guards %d, want 1 (the one guard enforcing its Guardrails)", name, cl.Status.Guards)
			}
		}
	}

	g := &v1alpha1.Guardrail{}
	// The reconciler writes status meanwhile: an edit retries on conflict, as kubectl's
	// apply does.
	edit := func(reason string) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-words"}, g); err != nil {
				return err
			}
			g.Spec.Reason = reason
			return k8s.Update(ctx, g)
		}))
	}
	start := time.Now()
	edit("Edited")
	await("the edit", func(s *policy.Snapshot) bool {
		for _, cg := range s.Guardrails {
			if cg.Name == "web-words" && cg.Generation == g.Generation {
				return true
			}
		}
		return false
	})
	t.Logf("apply → guard applied: %v", time.Since(start))
	waitEnforced(t, ns, "web-words", "1/1")

	// A burst of applies is debounced into a push or two, not one per apply.
	// Merge patches: one request each, and no conflict with the reconciler's status writes.
	for i := range 10 {
		before := g.DeepCopy()
		g.Spec.Reason = fmt.Sprintf("Burst %d", i)
		must(t, k8s.Patch(ctx, g, client.MergeFrom(before)))
	}
	pushes, sawLast := 0, false
	for timeout := time.After(20 * time.Second); !sawLast; {
		select {
		case s := <-applied:
			pushes++
			for _, cg := range s.Guardrails {
				sawLast = sawLast || (cg.Name == "web-words" && cg.Reason == "Burst 9")
			}
		case <-timeout:
			t.Fatal("the burst's last edit never arrived")
		}
	}
	for drained := false; !drained; {
		select {
		case <-applied:
			pushes++
		case <-time.After(500 * time.Millisecond):
			drained = true
		}
	}
	// How many depends on the gaps between the applies on a loaded machine; the
	// debounce itself is tested in hub_test.go.
	t.Logf("10 applies in a burst reached the guard as %d snapshots", pushes)

	if fi, err := os.Stat(filepath.Join(dir, cp.SnapshotFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("persisted snapshot: %v, mode %v; want mode 0600", err, fi)
	}
}

func waitEnforced(t *testing.T, ns, name, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	g := &v1alpha1.Guardrail{}
	for time.Now().Before(deadline) {
		must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g))
		if e := g.Status.Enforcement; e != nil && e.Summary == want && g.Status.ObservedGeneration == g.Generation {
			for _, c := range g.Status.Conditions {
				if c.Type == v1alpha1.ConditionEnforced && c.Status == metav1.ConditionTrue {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Guardrail %s: enforcement %+v, conditions %+v; want %s and Enforced True", name, g.Status.Enforcement, g.Status.Conditions, want)
}

func TestPodsWithoutGuardAreNamed(t *testing.T) {
	ns := fixture(t)
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bypass", Labels: map[string]string{"app": "other"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	must(t, k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(t, k8s.Status().Update(ctx, p))
	// Pods without a guard are not watched: the Guardrail sees them on its next reconcile.
	g := editGuardrail(t, ns, "other-words", func(g *v1alpha1.Guardrail) { g.Spec.Reason = "touch" })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(g), g))
		for _, c := range g.Status.Conditions {
			if c.Type == v1alpha1.ConditionEnforced && c.Reason == v1alpha1.ReasonPodsWithoutGuard {
				if !strings.Contains(c.Message, "bypass") || g.Status.Enforcement.Summary != "0/1" {
					t.Errorf("message %q, summary %q", c.Message, g.Status.Enforcement.Summary)
				}
				ready := false
				for _, r := range g.Status.Conditions {
					ready = ready || (r.Type == v1alpha1.ConditionReady && r.Status == metav1.ConditionTrue)
				}
				if !ready {
					t.Errorf("a bypass must not make the Guardrail unready: %+v", g.Status.Conditions)
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no PodsWithoutGuard: %+v", g.Status.Conditions)
}

func ptrTo[T any](v T) *T { return &v }

// editGuardrail changes a Guardrail's spec, retrying on conflict with the reconciler's
// status writes, as kubectl apply does.
func editGuardrail(t *testing.T, ns, name string, edit func(*v1alpha1.Guardrail)) *v1alpha1.Guardrail {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil {
			return err
		}
		edit(g)
		return k8s.Update(context.Background(), g)
	}))
	return g
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecretRotationReachesTheGuard: a new credential in the Secret is pushed.
func TestSecretRotationReachesTheGuard(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(token(t, p, guardv1.Audience)), 0o600))
	applied := make(chan *policy.Snapshot, 16)
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, func(s *policy.Snapshot) error { applied <- s; return nil }, func(error) {})
	credential := func(s *policy.Snapshot) string {
		for _, c := range s.Classifiers {
			if c.Name == "judge" {
				return string(c.Token)
			}
		}
		return ""
	}
	await := func(want string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case s := <-applied:
				if credential(s) == want {
					return
				}
			case <-timeout:
				t.Fatalf("the guard never got the credential it should")
			}
		}
	}
	await(canary + "-" + ns)
	sec := &corev1.Secret{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "judge"}, sec))
	sec.Data["apiKey"] = []byte(canary + "-rotated-" + ns)
	must(t, k8s.Update(ctx, sec))
	await(canary + "-rotated-" + ns)
}

// TestBrokenEditKeepsTheLastGoodGuardrail: an edit the Classifier cannot serve does not
// switch the Guardrail off in the guards.
func TestBrokenEditKeepsTheLastGoodGuardrail(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, guardv1.Audience)
	_, body := waitSnapshot(t, tok)
	var before cp.Snapshot
	must(t, json.Unmarshal(body, &before))

	editGuardrail(t, ns, "web-words", func(g *v1alpha1.Guardrail) { g.Spec.Categories = []string{"no-such-category"} })
	// A change elsewhere in the namespace, so that a new snapshot is compiled.
	editGuardrail(t, ns, "web-judge", func(g *v1alpha1.Guardrail) { g.Spec.Reason = "Edited" })

	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := poll(t, tok, cp.SubscribeRequest{Running: before.Version})
		if status == http.StatusOK {
			var s cp.Snapshot
			must(t, json.Unmarshal(body, &s))
			var words *policy.GuardrailObject
			for i := range s.Guardrails {
				if s.Guardrails[i].Name == "web-words" {
					words = &s.Guardrails[i]
				}
			}
			edited := false
			for _, x := range s.Guardrails {
				edited = edited || (x.Name == "web-judge" && x.Spec.Reason == "Edited")
			}
			if edited {
				if words == nil {
					t.Fatal("the broken Guardrail was dropped from the snapshot: its pods lost it")
				}
				if words.Generation != 1 || words.Spec.Categories[0] != "banned" {
					t.Errorf("kept %+v, want the last good generation 1", words.Spec)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit of web-judge never arrived")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
