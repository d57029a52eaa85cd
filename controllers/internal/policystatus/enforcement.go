package policystatus

import (
	"fmt"
	"sort"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// MaxNamed bounds the pods a condition message names.
const MaxNamed = 3

// Pod is what is known of one running pod a guardrail selects.
type Pod struct {
	Name string
	// Cached is whether the cache holds the pod (it is labelled injected); GuardErr is
	// then what the cache found of its spec: nil when it carries the guard.
	Cached   bool
	GuardErr error
	// Ack is its guard's Lease, nil when it has none.
	Ack *guards.Ack
}

// Enforcement is how the selected pods stand for one generation of a guardrail.
type Enforcement struct {
	Selected                                       int
	Acked, Without, NotAnswering, Refused, Waiting []string
	// Refusal is what the first refusing guard (by pod name) said, printable and bounded.
	Refusal string
	// NextExpiry is when the first live guard's Lease expires; zero when none is live.
	NextExpiry time.Time
}

// Add merges o (another namespace's pods) into e.
func (e *Enforcement) Add(o Enforcement) {
	e.Selected += o.Selected
	e.Acked = append(e.Acked, o.Acked...)
	e.Without = append(e.Without, o.Without...)
	e.NotAnswering = append(e.NotAnswering, o.NotAnswering...)
	e.Waiting = append(e.Waiting, o.Waiting...)
	if len(e.Refused) == 0 {
		e.Refusal = o.Refusal
	}
	e.Refused = append(e.Refused, o.Refused...)
	if !o.NextExpiry.IsZero() && (e.NextExpiry.IsZero() || o.NextExpiry.Before(e.NextExpiry)) {
		e.NextExpiry = o.NextExpiry
	}
}

// Count sorts each selected pod into one bucket, for the guardrail its guard's Lease lists
// as name at generation:
//
//   - without a guard: its spec does not carry the guard (cached and not verified), or it
//     has neither a Lease nor a cached spec that carries the guard;
//   - not answering: its guard's Lease expired (the guard stopped polling);
//   - acknowledged: its guard's live Lease names this generation;
//   - refused: its guard's live Lease says it refused the latest snapshot;
//   - waiting: a guard that has not acknowledged this generation yet (or is starting).
func Count(name string, generation int64, pods []Pod) Enforcement {
	e := Enforcement{Selected: len(pods)}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		switch {
		case p.Cached && p.GuardErr != nil, p.Ack == nil && !p.Cached:
			e.Without = append(e.Without, p.Name)
		case p.Ack == nil:
			e.Waiting = append(e.Waiting, p.Name)
		case !p.Ack.Live:
			e.NotAnswering = append(e.NotAnswering, p.Name)
		default:
			if e.NextExpiry.IsZero() || p.Ack.Expires.Before(e.NextExpiry) {
				e.NextExpiry = p.Ack.Expires
			}
			gen, ok := p.Ack.Enforced[name]
			switch {
			case ok && gen == generation:
				e.Acked = append(e.Acked, p.Name)
			case p.Ack.Refused != "":
				if len(e.Refused) == 0 {
					e.Refusal = p.Ack.Refused
				}
				e.Refused = append(e.Refused, p.Name)
			default:
				e.Waiting = append(e.Waiting, p.Name)
			}
		}
	}
	return e
}

// Condition is the Enforced condition of e, the loudest reason first: a bypass, then
// guards that stopped answering, then refusals. where names the pods' scope ("namespace
// shop", "the selected namespaces") for the message when none is selected.
func Condition(generation int64, where string, e Enforcement) (metav1.ConditionStatus, string, string) {
	switch {
	case e.Selected == 0:
		return metav1.ConditionFalse, v1alpha1.ReasonNoPodsSelected,
			fmt.Sprintf("No running pod of %s matches the selector", where)
	case len(e.Without) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonPodsWithoutGuard,
			fmt.Sprintf("%d of %d selected pods run without a guard, so their traffic bypasses this policy: %s; "+
				"opt their namespace in (label %s=enabled) or the pods (label %s=true) and restart them",
				len(e.Without), e.Selected, Named(e.Without), guardv1.LabelInjection, guardv1.LabelInject)
	case len(e.NotAnswering) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonGuardsNotAnswering,
			fmt.Sprintf("%d of %d selected pods' guards stopped answering the control plane, so what they enforce is "+
				"unknown: %s; look at their %s containers", len(e.NotAnswering), e.Selected, Named(e.NotAnswering),
				guardv1.ContainerName)
	case len(e.Refused) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonSnapshotRefused,
			fmt.Sprintf("%d of %d selected pods' guards refused the policy and keep their previous one: %s; a refusal: %s",
				len(e.Refused), e.Selected, Named(e.Refused), e.Refusal)
	case len(e.Acked) < e.Selected:
		return metav1.ConditionFalse, v1alpha1.ReasonAwaitingAcknowledgement,
			fmt.Sprintf("%d of %d selected pods enforce generation %d", len(e.Acked), e.Selected, generation)
	}
	return metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("All %d selected pods enforce generation %d", e.Selected, generation)
}

// Loud reports whether an Enforced reason deserves a Warning Event: a bypass, a guard that
// stopped answering, a refusal.
func Loud(reason string) bool {
	return reason == v1alpha1.ReasonPodsWithoutGuard || reason == v1alpha1.ReasonSnapshotRefused ||
		reason == v1alpha1.ReasonGuardsNotAnswering
}

// Status is status.enforcement of e.
func Status(e Enforcement) *v1alpha1.EnforcementStatus {
	return &v1alpha1.EnforcementStatus{
		SelectedPods: int32(e.Selected), AcknowledgedPods: int32(len(e.Acked)), //nolint:gosec // pods of a cluster
		PodsWithoutGuard: int32(len(e.Without)), //nolint:gosec // pods of a cluster
		Summary:          fmt.Sprintf("%d/%d", len(e.Acked), e.Selected),
	}
}

// Named lists a few names, sorted, and how many more there are.
func Named(names []string) string {
	sort.Strings(names)
	if len(names) <= MaxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(names[:MaxNamed], ", "), len(names)-MaxNamed)
}

// NotDistributed says that a guardrail that does not compile reaches no guard.
func NotDistributed(obj status.Object) {
	status.Set(obj, v1alpha1.ConditionEnforced, metav1.ConditionFalse, v1alpha1.ReasonNotDistributed,
		"This generation is not sent to guards until it compiles; guards that had an earlier generation keep it")
}
