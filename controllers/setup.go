// Package controllers wires the reconcilers of guardrail-operator into a manager; each
// concern lives in its own sub-package (classifier, guardrail, policyreport).
package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/guardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/policyreport"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// CacheOptions are the manager's cache: restricted to the given namespaces (comma
// separated; empty watches the whole cluster), and, for Pods, to those the injector
// handled (label guardrail.dev/injected, "true" or "false" when injection was refused),
// trimmed to metadata and phase — never a cluster-wide Pod informer.
func CacheOptions(namespaces string) cache.Options {
	handled, err := labels.NewRequirement(cp.LabelInjected, selection.Exists, nil)
	if err != nil {
		panic(err) // constant arguments
	}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*handled), Transform: trimPod},
	}}
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if opts.DefaultNamespaces == nil {
				opts.DefaultNamespaces = map[string]cache.Config{}
			}
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// trimPod keeps of a cached pod what the control plane reads: its metadata (labels, the
// annotations guards' acknowledgements are written to) and its phase. A pod's spec is
// most of its size, and a thousand injected pods should cost a few MiB.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta, Status: corev1.PodStatus{Phase: p.Status.Phase}}
	trimmed.ManagedFields = nil
	return trimmed, nil
}

// Setup registers the field indexes and the reconcilers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := index.Setup(ctx, mgr); err != nil {
		return err
	}
	if err := (&classifier.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("classifier-controller"),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&guardrail.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("guardrail-controller"),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&policyreport.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}
