// Package controllers wires the reconcilers of guardrail-operator into a manager; each
// concern lives in its own sub-package (classifier, guardrail, policyreport).
//
// Tests: each sub-package tests its own steps without an apiserver (a fake client, or
// none: guardrail's steps_test.go, classifier's reconciler_test.go, the enforcement count).
// The envtest specs of this package run the manager as SetupWith assembles it — both
// reconcilers, the pod cache's transform, the CRDs' validation, RBAC — against a real
// kube-apiserver: a Guardrail's behaviour there depends on its Classifier's reconciler and
// on the cache this package configures, so they stay beside the wiring they exercise.
package controllers

import (
	"context"
	"maps"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/clusterclassifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/clusterguardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/guardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/controllers/modelprovider"
	"github.com/guardrail-dev/guardrail-operator/controllers/policyreport"
)

// DefaultOperatorNamespace is the operator's namespace in config/ (the chart installs into
// its release's namespace, which main reads from $POD_NAMESPACE).
const DefaultOperatorNamespace = "guardrail-system"

// maxKeptAnnotation bounds the value of an annotation the cache keeps: a tenant writes its
// pods' annotations, and the manager holds every injected pod.
const maxKeptAnnotation = 4 << 10

// keptAnnotations are the only pod annotations the manager reads from its cache (the
// injector's, turned into Events on the pod); AnnotationGuardVerification is set by the
// cache itself.
var keptAnnotations = []string{guardv1.AnnotationInjectionWarnings, guardv1.AnnotationInjectorVersion}

// Options describe the installation the manager's cache and reconcilers serve.
type Options struct {
	// WatchNamespaces restricts Classifiers, Guardrails and Secrets to these namespaces
	// (comma separated); empty watches the whole cluster.
	WatchNamespaces string
	// OperatorNamespace is the operator's own namespace, where the control-plane server
	// keeps one Lease per guard (guards.LeaseName); the cache watches Leases there
	// only. Empty means DefaultOperatorNamespace.
	OperatorNamespace string
	// Guard is the guard as the injector renders it: the cache records of each injected
	// pod whether its spec carries it (injection.VerifyGuard). With no image no pod does.
	Guard injection.Guard
}

func (o Options) operatorNamespace() string {
	if o.OperatorNamespace == "" {
		return DefaultOperatorNamespace
	}
	return o.OperatorNamespace
}

// Cache is the manager's cache: restricted to WatchNamespaces (Secrets: those and
// OperatorNamespace); for Pods, to those the
// injector handled (label guardrail.dev/injected, "true" or "false" when injection was
// refused), trimmed to metadata, phase and whether the spec carries the guard — never a
// cluster-wide Pod informer; for Leases, to the guards' in OperatorNamespace.
func (o Options) Cache() cache.Options {
	handled, err := labels.NewRequirement(guardv1.LabelInjected, selection.Exists, nil)
	if err != nil {
		panic(err) // constant arguments
	}
	guardLease, err := labels.NewRequirement(guardv1.LabelLeasePodNamespace, selection.Exists, nil)
	if err != nil {
		panic(err) // constant arguments
	}
	shared, err := labels.NewRequirement(v1alpha1.LabelSharedGuard, selection.Exists, nil)
	if err != nil {
		panic(err) // constant arguments
	}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*handled), Transform: trimPod(o.Guard)},
		// The shared guards' objects only (sharedguard): never every Deployment.
		&appsv1.Deployment{}:            {Label: labels.NewSelector().Add(*shared)},
		&corev1.Service{}:               {Label: labels.NewSelector().Add(*shared)},
		&discoveryv1.EndpointSlice{}:    {Label: labels.NewSelector().Add(*shared)},
		&policyv1.PodDisruptionBudget{}: {Label: labels.NewSelector().Add(*shared)},
		&coordinationv1.Lease{}: {
			Namespaces: map[string]cache.Config{o.operatorNamespace(): {}},
			Label:      labels.NewSelector().Add(*guardLease),
		},
	}}
	for _, ns := range strings.Split(o.WatchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if opts.DefaultNamespaces == nil {
				opts.DefaultNamespaces = map[string]cache.Config{}
			}
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if opts.DefaultNamespaces != nil {
		// The Secrets of ClusterClassifiers and ModelProviders live in the operator's
		// namespace, watched or not: their rotation must reach the guards.
		secrets := maps.Clone(opts.DefaultNamespaces)
		secrets[o.operatorNamespace()] = cache.Config{}
		opts.ByObject[&corev1.Secret{}] = cache.ByObject{Namespaces: secrets}
	}
	return opts
}

// CacheOptions is Options{WatchNamespaces: namespaces}.Cache(): Leases in
// DefaultOperatorNamespace, and no pod's spec counts as carrying the guard.
func CacheOptions(namespaces string) cache.Options {
	return Options{WatchNamespaces: namespaces}.Cache()
}

// trimPod keeps of a cached pod what the manager reads: its metadata without the
// annotations it does not read, its phase, and whether its spec carries the guard
// (guards.AnnotationGuardVerification). A pod's spec is most of its size, and its
// annotations are the tenant's to fill: a thousand injected pods should cost a few MiB
// whatever they carry. Pods cached by metadata only (PartialObjectMetadata) are trimmed
// the same way, without the verification. The transform is idempotent, as client-go asks:
// a pod already trimmed (no containers, which the apiserver never serves, and a
// verification) is kept as it is.
func trimPod(g injection.Guard) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch p := obj.(type) {
		case *corev1.Pod:
			if _, ok := p.Annotations[guards.AnnotationGuardVerification]; ok && len(p.Spec.Containers) == 0 {
				return p, nil
			}
			trimmed := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: trimMeta(p.ObjectMeta), Status: corev1.PodStatus{Phase: p.Status.Phase}}
			if _, ok := p.Labels[v1alpha1.LabelSharedGuard]; ok {
				// The shared guards' Services send traffic to these addresses (sharedguard).
				trimmed.Status.PodIPs = p.Status.PodIPs
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady {
						trimmed.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
					}
				}
			}
			verification := injection.VerifyGuard(p, g)
			guards.SetGuardVerification(trimmed, verification)
			if verification == nil {
				guards.SetGuardProviders(trimmed, injection.GuardProviders(p))
				guards.SetGuardExtProc(trimmed, injection.IsExtProc(p, g))
				guards.SetGuardTracing(trimmed, injection.GuardTracingEndpoint(p))
			}
			return trimmed, nil
		case *metav1.PartialObjectMetadata:
			return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: trimMeta(p.ObjectMeta)}, nil
		}
		return obj, nil
	}
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	kept := map[string]string{}
	for _, k := range keptAnnotations {
		if v, ok := m.Annotations[k]; ok && len(v) <= maxKeptAnnotation {
			kept[k] = v
		}
	}
	m.Annotations = nil
	if len(kept) > 0 {
		m.Annotations = kept
	}
	m.ManagedFields = nil
	return m
}

// Setup is SetupWith(ctx, mgr, Options{}).
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	return SetupWith(ctx, mgr, Options{})
}

// SetupWith registers the field indexes and the reconcilers with mgr, whose cache is
// o.Cache().
func SetupWith(ctx context.Context, mgr ctrl.Manager, o Options) error {
	if err := index.Setup(ctx, mgr); err != nil {
		return err
	}
	// One compilation per generation of each policy, shared by the four reconcilers.
	compiler := policyreconciler.NewCompiler()
	if err := (&classifier.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("classifier-controller"),
		OperatorNamespace: o.operatorNamespace(),
		Compiler:          compiler,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&guardrail.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("guardrail-controller"),
		OperatorNamespace: o.operatorNamespace(),
		Compiler:          compiler,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&clusterclassifier.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("clusterclassifier-controller"),
		OperatorNamespace: o.operatorNamespace(),
		Compiler:          compiler,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&clusterguardrail.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("clusterguardrail-controller"),
		OperatorNamespace: o.operatorNamespace(),
		Compiler:          compiler,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&modelprovider.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("modelprovider-controller"),
		OperatorNamespace: o.operatorNamespace(),
		AllowLocalURLs:    classifier.AllowLocalURLs,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&guards.LeaseCollector{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Namespace: o.operatorNamespace(),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&policyreport.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}
