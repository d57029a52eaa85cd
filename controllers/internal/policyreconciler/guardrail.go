package policyreconciler

import (
	"context"
	"fmt"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// GuardrailKind is what a kind of guardrail G, compiled against its kind of classifier C,
// tells the Guardrails reconciler. Its zero value is used.
type GuardrailKind[G, C status.Object] interface {
	// Kind is G's kind ("Guardrail"); ClassifierKind C's ("Classifier").
	Kind() string
	ClassifierKind() string
	New() G
	NewList() client.ObjectList
	NewClassifier() C
	// Parts returns the parts of g every kind of guardrail has.
	Parts(g G) (*v1alpha1.GuardrailSpec, *v1alpha1.GuardrailStatus)
	// Sources returns g and c as the compiler reads them.
	Sources(g G, c C) (policy.GuardrailObject, policy.ClassifierObject)
	// Invalid says what of g's spec that the compiler does not read is wrong, naming the
	// field; "" when nothing is.
	Invalid(g G) string
	// Namespaces returns which namespaces g's pods may be in: nil is every one (of g's
	// own namespace, for a namespaced kind).
	Namespaces(ctx context.Context, c client.Reader, g G) (func(namespace string) bool, error)
	// Where names, in the Enforced condition's message, where g selects pods.
	Where(g G) string
	// Breakdown records the enforcement of each namespace with selected pods.
	Breakdown(g G, perNS map[string]policystatus.Enforcement)
	// Referencing returns the list options that find the guardrails referencing a
	// classifier (those not referencing it are skipped after).
	Referencing(classifier client.Object) []client.ListOption
	// Recount returns the list options that find the guardrails to recount when pods or
	// guards of namespace change, and false when there are none; Coalesce how long such
	// events wait, so that many are one recount.
	Recount(namespace string) ([]client.ListOption, bool)
	Coalesce() time.Duration
	// WatchesNamespaces is whether a namespace's labels can change what G selects.
	WatchesNamespaces() bool
}

// Guardrails reconciles a kind of guardrail G (K says which): it resolves G's
// classifierRef among the classifiers C, compiles G against it and counts the pods it
// selects, keeping the kstatus conditions, ClassifierResolved and Enforced.
type Guardrails[G, C status.Object, K GuardrailKind[G, C]] struct {
	client.Client
	// APIReader lists the pods a guardrail selects: pods without a guard are not cached.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// OperatorNamespace holds the guards' Leases, read from the cache.
	OperatorNamespace string
	// Now is the clock guards' Leases are judged by; nil is time.Now.
	Now func() time.Time
	// Compiler is the manager's; nil compiles on every reconcile.
	Compiler *Compiler
}

// GuardrailScope is what the steps of one reconcile share.
type GuardrailScope[G, C status.Object] struct {
	Obj        G
	Classifier C
	// Compiled is the guardrail as the guard enforces it, once it compiled.
	Compiled *policy.Guardrail
	// recount is when status.enforcement changes unless something else does: the first
	// live guard's Lease expires. Zero when none is live.
	recount time.Duration
}

func (r *Guardrails[G, C, K]) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Reconcile brings a guardrail's status in line with its spec, its classifier and the
// pods it selects.
func (r *Guardrails[G, C, K]) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var k K
	obj := k.New()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Compiler.Forget(k.Kind(), req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}

	s := &GuardrailScope[G, C]{Obj: obj}
	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionClassifierResolved).
		InEffect(func() string { return policystatus.InEffect(obj.GetGeneration(), s.Compiled) }).
		WaitingReasons(v1alpha1.ReasonClassifierNotReady)
	// Settled, the selected pods are recounted when the first live guard's Lease expires,
	// and now and then (pods without a guard are not watched).
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, func() time.Duration {
		return policystatus.NextRecount(s.Compiled != nil, s.recount)
	})

	for _, step := range []func(context.Context, *GuardrailScope[G, C]) (ctrl.Result, error){
		r.ResolveClassifier, r.Compile, r.Enforcement,
	} {
		res, err := step(ctx, s)
		if err != nil || !res.IsZero() {
			if s.Compiled == nil {
				// A guardrail that does not compile reaches no guard.
				_, st := k.Parts(obj)
				st.Enforcement = nil
				policystatus.NotDistributed(obj)
			}
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// ResolveClassifier fetches the referenced classifier, in the guardrail's namespace for a
// namespaced kind, and waits until it is Ready for its latest generation
// (policystatus.ClassifierReady); a Stalled classifier stalls the guardrail.
func (r *Guardrails[G, C, K]) ResolveClassifier(ctx context.Context, s *GuardrailScope[G, C]) (ctrl.Result, error) {
	var k K
	spec, _ := k.Parts(s.Obj)
	key := types.NamespacedName{Namespace: s.Obj.GetNamespace(), Name: spec.ClassifierRef.Name}
	what := k.ClassifierKind() + " " + key.Name
	c := k.NewClassifier()
	err := r.Get(ctx, key, c)
	switch {
	case apierrors.IsNotFound(err):
		where := ""
		if key.Namespace != "" {
			where = " in namespace " + key.Namespace
		}
		return policystatus.ClassifierMissing(s.Obj, what, where)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading %s: %w", what, err)
	}
	if res, err := policystatus.ClassifierReady(s.Obj, c, what); err != nil || !res.IsZero() {
		return res, err
	}
	s.Classifier = c
	return ctrl.Result{}, nil
}

// Compile compiles the guardrail against its classifier with the compiler the guard runs,
// once per generation of each (Compiler). A failure names the field and stalls.
func (r *Guardrails[G, C, K]) Compile(_ context.Context, s *GuardrailScope[G, C]) (ctrl.Result, error) {
	var k K
	gm, cm := k.Sources(s.Obj, s.Classifier)
	cc, err := r.Compiler.Classifier(&cm)
	if err != nil {
		// The classifier is Ready, so it compiled for its own reconciler: a version skew.
		return ctrl.Result{}, fmt.Errorf("compiling %s %s: %w", k.ClassifierKind(), cm.Name, err)
	}
	if msg := k.Invalid(s.Obj); msg != "" {
		status.MarkStalled(s.Obj, v1alpha1.ReasonInvalidSpec, msg)
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", msg))
	}
	s.Compiled, err = r.Compiler.Guardrail(&gm, &cm, cc)
	return ctrl.Result{}, policystatus.Compiled(s.Obj, k.ClassifierKind()+" "+cm.Name, cm.Generation, err)
}

// SetupWithManager registers the reconciler. A classifier change re-reconciles the
// guardrails that reference it; injected pods and guards' Leases (and, for a kind that
// selects namespaces, namespaces) recount the guardrails they concern after a short
// coalescing delay.
func (r *Guardrails[G, C, K]) SetupWithManager(mgr ctrl.Manager) error {
	var k K
	b := ctrl.NewControllerManagedBy(mgr).
		For(k.New()).
		Watches(k.NewClassifier(), handler.EnqueueRequestsFromMapFunc(r.forClassifier)).
		// Injected pods only (the manager's cache is restricted to them and trimmed to
		// metadata, phase and whether their spec carries the guard).
		Watches(&corev1.Pod{}, r.recount(client.Object.GetNamespace), builder.WithPredicates(policystatus.PodChanged)).
		// Guards' Leases (the cache holds those of the operator's namespace): a guard's
		// acknowledgement, and its return after it stopped answering.
		Watches(&coordinationv1.Lease{}, r.recount(func(o client.Object) string {
			return o.GetLabels()[guardv1.LabelLeasePodNamespace]
		}), builder.WithPredicates(policystatus.LeaseChanged))
	if k.WatchesNamespaces() {
		b = b.Watches(&corev1.Namespace{}, r.recount(client.Object.GetNamespace), builder.OnlyMetadata)
	}
	return b.Named(name(k.Kind())).Complete(r)
}

func (r *Guardrails[G, C, K]) forClassifier(ctx context.Context, c client.Object) []reconcile.Request {
	var k K
	return requests(ctx, r.Client, k.NewList(), k.Referencing(c), func(o client.Object) bool {
		spec, _ := k.Parts(o.(G))
		return spec.ClassifierRef.Name == c.GetName()
	})
}

// recount enqueues the guardrails of the namespace an object concerns (namespaceOf; every
// guardrail of a kind that selects namespaces) after K's Coalesce; the queue keeps one
// request per guardrail however many pods and guards report meanwhile.
func (r *Guardrails[G, C, K]) recount(namespaceOf func(client.Object) string) handler.EventHandler {
	var k K
	return coalesced(k.Coalesce(), func(ctx context.Context, o client.Object) []reconcile.Request {
		opts, ok := k.Recount(namespaceOf(o))
		if !ok {
			return nil
		}
		return requests(ctx, r.Client, k.NewList(), opts, nil)
	})
}
