package guardrail

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
)

func TestEnforcementCountsOnlyWhatGuardsSayInTheirLeases(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 3}}
	live := func(enforced map[string]int64, expiresIn time.Duration) *guards.Ack {
		return &guards.Ack{Ack: guardv1.Ack{Live: true, Expires: now.Add(expiresIn), Enforced: enforced}}
	}
	expired := &guards.Ack{Ack: guardv1.Ack{Live: false, Expires: now.Add(-time.Second), Enforced: map[string]int64{"web": 3}}}
	refused := live(map[string]int64{"web": 2}, time.Minute)
	refused.Refused = "abc: the guard does not know field x"
	notAGuard := errors.New("the pod has no container named guardrail-guard")
	cases := []struct {
		name       string
		pods       []policystatus.Pod
		want       string // summary, reason and the names the message must hold
		nextExpiry time.Duration
	}{{
		name: "no pod selected",
		want: "0/0 NoPodsSelected",
	}, {
		name: "a guard whose live Lease names this generation counts, and the recount is due at its expiry",
		pods: []policystatus.Pod{{Name: "a", Cached: true, Ack: live(map[string]int64{"web": 3, "other": 9}, 40*time.Second)}},
		want: "1/1 Succeeded", nextExpiry: 40 * time.Second,
	}, {
		name: "the first expiry of several live guards is the next recount",
		pods: []policystatus.Pod{
			{Name: "a", Cached: true, Ack: live(map[string]int64{"web": 3}, 40*time.Second)},
			{Name: "b", Cached: true, Ack: live(map[string]int64{"web": 3}, 7*time.Second)},
		},
		want: "2/2 Succeeded", nextExpiry: 7 * time.Second,
	}, {
		name: "a pod the cache holds, whose spec does not carry the guard, is without guard whatever its Lease says",
		pods: []policystatus.Pod{{Name: "forged", Cached: true, GuardErr: notAGuard, Ack: live(map[string]int64{"web": 3}, time.Minute)}},
		want: "0/1 PodsWithoutGuard forged",
	}, {
		name: "a pod neither cached nor with a Lease is without guard",
		pods: []policystatus.Pod{{Name: "plain"}},
		want: "0/1 PodsWithoutGuard plain",
	}, {
		name: "a pod with a verified guard but no Lease yet waits for it",
		pods: []policystatus.Pod{{Name: "starting", Cached: true}},
		want: "0/1 AwaitingAcknowledgement",
	}, {
		name: "a guard whose Lease expired does not count and is named",
		pods: []policystatus.Pod{{Name: "a", Cached: true, Ack: live(map[string]int64{"web": 3}, time.Minute)}, {Name: "dead", Cached: true, Ack: expired}},
		want: "1/2 GuardsNotAnswering dead", nextExpiry: time.Minute,
	}, {
		name: "an uncached pod (its injected label removed) counts by its live Lease",
		pods: []policystatus.Pod{{Name: "relabelled", Ack: live(map[string]int64{"web": 3}, time.Minute)}},
		want: "1/1 Succeeded", nextExpiry: time.Minute,
	}, {
		name: "a guard that acknowledged an older generation waits",
		pods: []policystatus.Pod{{Name: "a", Cached: true, Ack: live(map[string]int64{"web": 2}, time.Minute)}},
		want: "0/1 AwaitingAcknowledgement", nextExpiry: time.Minute,
	}, {
		name: "a refusal is named with what the guard said",
		pods: []policystatus.Pod{{Name: "r", Cached: true, Ack: refused}},
		want: "0/1 SnapshotRefused r the guard does not know field x", nextExpiry: time.Minute,
	}, {
		name: "a bypass is louder than a guard that stopped answering, which is louder than a refusal",
		pods: []policystatus.Pod{{Name: "plain"}, {Name: "dead", Cached: true, Ack: expired}, {Name: "r", Cached: true, Ack: refused}},
		want: "0/3 PodsWithoutGuard plain", nextExpiry: time.Minute,
	}, {
		name: "a guard that stopped answering is louder than a refusal",
		pods: []policystatus.Pod{{Name: "dead", Cached: true, Ack: expired}, {Name: "r", Cached: true, Ack: refused}},
		want: "0/2 GuardsNotAnswering dead", nextExpiry: time.Minute,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := policystatus.Count(g.Name, g.Generation, tc.pods)
			st, reason, msg := policystatus.Condition(g.Generation, Kind{}.Where(g), e)
			fields := strings.Fields(tc.want)
			if got := fmt.Sprintf("%d/%d %s", len(e.Acked), e.Selected, reason); got != fields[0]+" "+fields[1] {
				t.Errorf("got %s, want %s (%s)", got, fields[0]+" "+fields[1], msg)
			}
			for _, name := range fields[2:] {
				if !strings.Contains(msg, name) {
					t.Errorf("message %q does not name %q", msg, name)
				}
			}
			if (reason == v1alpha1.ReasonSucceeded) != (st == metav1.ConditionTrue) {
				t.Errorf("status %s with reason %s", st, reason)
			}
			var next time.Duration
			if !e.NextExpiry.IsZero() {
				next = e.NextExpiry.Sub(now)
			}
			if next != tc.nextExpiry {
				t.Errorf("next recount in %v, want %v", next, tc.nextExpiry)
			}
		})
	}
}

func TestOnlyAcknowledgementsAndReturnsFromSilencePassTheLeaseWatch(t *testing.T) {
	at := func(renewed time.Time, annotations map[string]string) *coordinationv1.Lease {
		t := metav1.NewMicroTime(renewed)
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec: coordinationv1.LeaseSpec{RenewTime: &t, LeaseDurationSeconds: ptr.To(int32(60))}}
	}
	t0 := time.Unix(1_700_000_000, 0)
	acked := map[string]string{guardv1.AnnotationEnforced: "web=1"}
	for _, tc := range []struct {
		name     string
		old, new *coordinationv1.Lease
		pass     bool
	}{
		{"a heartbeat", at(t0, acked), at(t0.Add(30*time.Second), acked), false},
		{"a new acknowledgement", at(t0, acked), at(t0.Add(30*time.Second), map[string]string{guardv1.AnnotationEnforced: "web=2"}), true},
		{"a refusal", at(t0, acked), at(t0, map[string]string{guardv1.AnnotationEnforced: "web=1", guardv1.AnnotationRefused: "v: no"}), true},
		{"a renewal after the Lease expired", at(t0, acked), at(t0.Add(61*time.Second), acked), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policystatus.LeaseChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.pass {
				t.Errorf("passes %v, want %v", got, tc.pass)
			}
		})
	}
}
