package controlplane_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// TestARelabelledPodGetsItsNewPolicy: snapshots are shared by the label sets that select
// the same Guardrails, and a pod's guard still gets its new policy as soon as its labels
// change what selects it. A relabel that changes nothing of that pushes nothing.
func TestARelabelledPodGetsItsNewPolicy(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, guardv1.Audience)
	_, body := waitSnapshot(t, tok)
	var web cp.Snapshot
	must(t, json.Unmarshal(body, &web))

	relabel := func(after time.Duration, app, rev string) {
		time.Sleep(after)
		before := p.DeepCopy()
		p.Labels["app"], p.Labels["rev"] = app, rev
		must(t, k8s.Patch(context.Background(), p, client.MergeFrom(before)))
	}
	longPoll := func(running string) (int, *cp.Snapshot, time.Duration) {
		t.Helper()
		start := time.Now()
		status, body := poll(t, tok, cp.SubscribeRequest{Running: running})
		var s cp.Snapshot
		if status == http.StatusOK {
			must(t, json.Unmarshal(body, &s))
		}
		return status, &s, time.Since(start)
	}
	names := func(s *cp.Snapshot) string {
		var n []string
		for _, g := range s.Guardrails {
			n = append(n, g.Name)
		}
		return strings.Join(n, ",")
	}

	// Relabelled during a long poll, still selected by the same Guardrails: the same
	// snapshot, so the poll ends when its wait does (2s), with nothing new.
	go relabel(300*time.Millisecond, "web", "2")
	if status, s, _ := longPoll(web.Version); status != http.StatusNoContent {
		t.Fatalf("a relabel that selects the same Guardrails pushed %d %s, want 204", status, names(s))
	}
	// Relabelled to app=other during a long poll: pushed at once. A poll whose wait ends
	// is answered 204 whatever changed (Server.subscribe), so a 200 is the push; how long
	// it took is logged, not asserted: on a busy machine the poll's own start (the token's
	// review, the pod's read) and the relabel's reconcile take seconds, and that is no fault.
	go relabel(300*time.Millisecond, "other", "3")
	status, s, took := longPoll(web.Version)
	if status != http.StatusOK || names(s) != "other-words" {
		t.Fatalf("after relabelling the pod app=other its guard got %d %q, want other-words pushed during the poll", status, names(s))
	}
	t.Logf("relabel → new policy: %v after the poll began (the relabel at 300ms)", took.Round(time.Millisecond))
	// And back: the first snapshot again, as it was.
	go relabel(300*time.Millisecond, "web", "4")
	if status, s, _ := longPoll(s.Version); status != http.StatusOK || s.Version != web.Version {
		t.Fatalf("back to app=web the guard got %d %s (version %s), want version %s", status, names(s), s.Version, web.Version)
	}
}
