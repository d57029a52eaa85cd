package policyreconciler

import (
	"context"
	"fmt"
	"sort"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// ClassifierKind is what a kind of classifier C tells the Classifiers reconciler. Its zero
// value is used.
type ClassifierKind[C status.Object] interface {
	New() C
	NewList() client.ObjectList
	// Parts returns the parts of c every kind of classifier has.
	Parts(c C) (*v1alpha1.ClassifierSpec, *v1alpha1.ClassifierStatus)
	// Source returns c as the compiler reads it.
	Source(c C) policy.ClassifierObject
	// SecretNamespace is where c's credentials Secret is: c's namespace, or the
	// operator's for a cluster kind, never a tenant's.
	SecretNamespace(c C, operatorNamespace string) string
	// ForSecret returns the list options that find the classifiers that may name the
	// Secret (those that do not are skipped after), and false when none can.
	ForSecret(secret client.Object, operatorNamespace string) ([]client.ListOption, bool)
	// ForGuards returns the list options that find the classifiers whose usage the guards
	// of a namespace change, and false when there are none.
	ForGuards(namespace string) ([]client.ListOption, bool)
	// AllowLocalURLs is the manager's --classifier-allow-local-urls.
	AllowLocalURLs() bool
}

// Classifiers reconciles a kind of classifier C (KC says which), used by the guardrails G
// (KG): it compiles C's spec as the guard will, resolves its credentials, counts the
// guardrails that reference it and the live guards that enforce one, and holds its
// deletion while guardrails reference it.
type Classifiers[C, G status.Object, KC ClassifierKind[C], KG GuardrailKind[G, C]] struct {
	client.Client
	// APIReader reads Secrets directly from the apiserver: the manager caches only their
	// metadata, so credentials are not held in the operator's memory.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// OperatorNamespace holds the guards' Leases (read from the cache) and the
	// credentials' Secrets of a cluster kind.
	OperatorNamespace string
	// Compiler is the manager's; nil compiles on every reconcile.
	Compiler *Compiler
}

// Reconcile brings a classifier's status in line with its spec, its Secret and its users.
func (r *Classifiers[C, G, KC, KG]) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var kc KC
	var kg KG
	obj := kc.New()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Compiler.Forget(kg.ClassifierKind(), req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionCredentialsResolved)
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, nil)

	if !obj.GetDeletionTimestamp().IsZero() {
		// Deletion waits for the guardrails that use it (policystatus.Release).
		users, err := r.users(ctx, obj)
		if err != nil {
			return ctrl.Result{}, err
		}
		if released, err := policystatus.Release(ctx, r.Client, r.Recorder, obj, kg.Kind(), users); released || err != nil {
			return ctrl.Result{}, err
		}
		// Held by its users, the classifier keeps serving them: it is reconciled as usual.
	} else if err := policystatus.Protect(ctx, r.Client, obj); err != nil {
		return ctrl.Result{}, err
	}
	for _, step := range []func(context.Context, C) (ctrl.Result, error){r.Usage, r.CheckSpec, r.Credentials} {
		res, err := step(ctx, obj)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// Usage counts the guardrails that reference the classifier and the live guards whose
// policy holds one of them (the control-plane server records acks on each guard's Lease
// in the operator's namespace; tenants cannot write them). It runs first, so that the
// counts are shown whatever the state of the classifier.
func (r *Classifiers[C, G, KC, KG]) Usage(ctx context.Context, c C) (ctrl.Result, error) {
	var kc KC
	_, st := kc.Parts(c)
	users, err := r.users(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	st.Guardrails = int32(len(users)) //nolint:gosec // guardrails of a namespace or a cluster
	st.Guards = 0
	if len(users) == 0 {
		return ctrl.Result{}, nil
	}
	acks, err := listAcks(ctx, r.Client, r.OperatorNamespace, c.GetNamespace(), time.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, a := range acks {
		if !a.Live {
			continue
		}
		for _, u := range users {
			if _, ok := a.Enforced[ackName(c.GetNamespace(), u)]; ok {
				st.Guards++
				break
			}
		}
	}
	return ctrl.Result{}, nil
}

// CheckSpec compiles the spec as the guard will, once per generation
// (policystatus.CheckSpec): what the schema cannot check stalls the classifier with the
// offending field named, and so does a local backend URL unless AllowLocalURLs.
func (r *Classifiers[C, G, KC, KG]) CheckSpec(_ context.Context, c C) (ctrl.Result, error) {
	var kc KC
	_, st := kc.Parts(c)
	m := kc.Source(c)
	compiled, err := r.Compiler.Classifier(&m)
	return policystatus.CheckSpec(c, st, &m, compiled, err, kc.AllowLocalURLs())
}

// Credentials checks that the Secret named by credentialsSecretRef, in KC's
// SecretNamespace, holds a non-empty value under its key. The value is not kept.
func (r *Classifiers[C, G, KC, KG]) Credentials(ctx context.Context, c C) (ctrl.Result, error) {
	var kc KC
	spec, _ := kc.Parts(c)
	return policystatus.Credentials(ctx, r.APIReader, c, spec.CredentialsSecretRef, kc.SecretNamespace(c, r.OperatorNamespace))
}

// users returns the names of the guardrails that reference c, sorted.
func (r *Classifiers[C, G, KC, KG]) users(ctx context.Context, c C) ([]string, error) {
	var kg KG
	list := kg.NewList()
	if err := r.List(ctx, list, kg.Referencing(c)...); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kg.Kind(), err)
	}
	var names []string
	_ = eachItem(list, func(o client.Object) {
		if spec, _ := kg.Parts(o.(G)); spec.ClassifierRef.Name == c.GetName() {
			names = append(names, o.GetName())
		}
	})
	sort.Strings(names)
	return names, nil
}

// SetupWithManager registers the reconciler. Secrets are watched by metadata only; a
// change to one re-reconciles the classifiers that name it. A guardrail's new generation
// re-reconciles the classifier it references, and a guard's acknowledgement the
// classifiers of its namespace (every one of a cluster kind; there are few), to keep the
// usage counts true.
func (r *Classifiers[C, G, KC, KG]) SetupWithManager(mgr ctrl.Manager) error {
	var kc KC
	var kg KG
	return ctrl.NewControllerManagedBy(mgr).
		For(kc.New()).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.forSecret), builder.OnlyMetadata).
		Watches(kg.New(), handler.EnqueueRequestsFromMapFunc(classifierOf[G, C, KG]),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.forLease),
			builder.WithPredicates(policystatus.EnforcedChanged)).
		Named(name(kg.ClassifierKind())).
		Complete(r)
}

func (r *Classifiers[C, G, KC, KG]) forSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	var kc KC
	opts, ok := kc.ForSecret(secret, r.OperatorNamespace)
	if !ok {
		return nil
	}
	return requests(ctx, r.Client, kc.NewList(), opts, func(o client.Object) bool {
		spec, _ := kc.Parts(o.(C))
		return spec.CredentialsSecretRef != nil && spec.CredentialsSecretRef.Name == secret.GetName()
	})
}

func (r *Classifiers[C, G, KC, KG]) forLease(ctx context.Context, lease client.Object) []reconcile.Request {
	var kc KC
	opts, ok := kc.ForGuards(lease.GetLabels()[guardv1.LabelLeasePodNamespace])
	if !ok {
		return nil
	}
	return requests(ctx, r.Client, kc.NewList(), opts, nil)
}

// classifierOf is the classifier guardrail g references.
func classifierOf[G, C status.Object, KG GuardrailKind[G, C]](_ context.Context, g client.Object) []reconcile.Request {
	var kg KG
	spec, _ := kg.Parts(g.(G))
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: g.GetNamespace(), Name: spec.ClassifierRef.Name}}}
}
