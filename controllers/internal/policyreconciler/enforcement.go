package policyreconciler

import (
	"context"
	"fmt"
	"sort"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// expirySlack is how long after a guard's Lease expires its guardrails are recounted.
const expirySlack = 100 * time.Millisecond

// Selector parses a label selector of the API; nil selects everything.
func Selector(s *v1alpha1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(s))
}

// Enforcement compares the running pods the guardrail selects with those whose guard
// acknowledged this generation and still answers (policystatus.Count), in its namespace
// or, for a cluster kind, in every namespace K's Namespaces picks, summed into
// status.enforcement and the Enforced condition (a Warning Event when it turns loud).
//
// Whatever the number of namespaces, that is one list of the selected pods from the
// apiserver by metadata (pods without a guard are not cached, and they are the ones a
// user must hear about), one of the injected pods and one of the guards' Leases from the
// cache. What a guard acknowledged is its Lease in the operator's namespace, written by
// the control-plane server only; whether a pod's spec carries the guard is what the cache
// found (guards.GuardVerification). Labels and annotations of pods prove nothing: tenants
// write them. The next recount is due when the first live guard's Lease expires, so a
// guard that stops answering drops out without any event.
func (r *Guardrails[G, C, K]) Enforcement(ctx context.Context, s *GuardrailScope[G, C]) (ctrl.Result, error) {
	var k K
	g := s.Obj
	spec, st := k.Parts(g)
	sel, err := Selector(spec.Selector)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("selector: %w", err) // compiled already; unreachable
	}
	inScope, err := k.Namespaces(ctx, r.Client, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	ns := g.GetNamespace() // "" for a cluster kind: every namespace
	running := &metav1.PartialObjectMetadataList{}
	running.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, running, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning))}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected pods: %w", err)
	}
	var cached corev1.PodList
	if err := r.List(ctx, &cached, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected injected pods: %w", err)
	}
	now := r.now()
	acks, err := listAcks(ctx, r.Client, r.OperatorNamespace, ns, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	verified := make(map[types.UID]error, len(cached.Items))
	for i := range cached.Items {
		verified[cached.Items[i].UID] = guards.GuardVerification(&cached.Items[i])
	}
	byNS := map[string][]policystatus.Pod{}
	for i := range running.Items {
		p := &running.Items[i]
		if inScope != nil && !inScope(p.Namespace) {
			continue
		}
		pod := policystatus.Pod{Name: p.Name}
		if ns == "" {
			pod.Name = p.Namespace + "/" + p.Name
		}
		pod.GuardErr, pod.Cached = verified[p.UID]
		if a, ok := acks[p.UID]; ok {
			pod.Ack = &a
		}
		byNS[p.Namespace] = append(byNS[p.Namespace], pod)
	}
	namespaces := make([]string, 0, len(byNS))
	for n := range byNS {
		namespaces = append(namespaces, n)
	}
	sort.Strings(namespaces)
	var total policystatus.Enforcement
	perNS := make(map[string]policystatus.Enforcement, len(byNS))
	for _, n := range namespaces {
		e := policystatus.Count(AckName(g), g.GetGeneration(), byNS[n])
		total.Add(e)
		perNS[n] = e
	}
	st.Enforcement = policystatus.Status(total)
	k.Breakdown(g, perNS)

	before := status.Get(g, v1alpha1.ConditionEnforced)
	cst, reason, msg := policystatus.Condition(g.GetGeneration(), k.Where(g), total)
	status.Set(g, v1alpha1.ConditionEnforced, cst, reason, msg)
	if policystatus.Loud(reason) && r.Recorder != nil && (before == nil || before.Reason != reason || before.Message != msg) {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", msg)
	}
	if !total.NextExpiry.IsZero() {
		s.recount = total.NextExpiry.Sub(now) + expirySlack
	}
	return ctrl.Result{}, nil
}

// AckName is the name under which a guard's Lease lists guardrail g (or a guardrail of
// g's scope named g) it enforces: its name, or "/name" for a cluster kind
// (policystatus.ClusterName).
func AckName(g client.Object) string { return ackName(g.GetNamespace(), g.GetName()) }

func ackName(namespace, name string) string {
	if namespace == "" {
		return policystatus.ClusterName(name)
	}
	return name
}

// listAcks reads the Leases of the guards of namespace ns ("" for every namespace), in
// the operator's namespace leaseNS, by the pod's UID.
func listAcks(ctx context.Context, c client.Reader, leaseNS, ns string, now time.Time) (map[types.UID]guards.Ack, error) {
	var leases coordinationv1.LeaseList
	var which client.ListOption = client.MatchingLabels{guardv1.LabelLeasePodNamespace: ns}
	if ns == "" {
		which = client.HasLabels{guardv1.LabelLeasePodNamespace}
	}
	if err := c.List(ctx, &leases, client.InNamespace(leaseNS), which); err != nil {
		return nil, fmt.Errorf("listing the guards' Leases: %w", err)
	}
	acks := make(map[types.UID]guards.Ack, len(leases.Items))
	for i := range leases.Items {
		a := guards.ReadAck(&leases.Items[i], now)
		acks[a.UID] = a
	}
	return acks, nil
}
