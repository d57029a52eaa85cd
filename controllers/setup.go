// Package controllers wires the reconcilers of guardrail-operator into a manager; each
// concern lives in its own sub-package (classifier, guardrail).
package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/guardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
)

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
	return (&guardrail.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("guardrail-controller"),
	}).SetupWithManager(mgr)
}
