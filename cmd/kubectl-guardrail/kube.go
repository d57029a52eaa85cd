package main

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// The resources the plugin reads. The cluster kinds are read with the dynamic client and
// only when the cluster serves them, so that the plugin works with an operator that
// predates them.
var (
	gvGuardrail          = schema.GroupVersion{Group: api.GroupVersion.Group, Version: api.GroupVersion.Version}
	resGuardrails        = gvGuardrail.WithResource("guardrails")
	resClassifiers       = gvGuardrail.WithResource("classifiers")
	resClusterGuardrails = gvGuardrail.WithResource("clusterguardrails")
	resClusterClassifier = gvGuardrail.WithResource("clusterclassifiers")
)

// errNoCRD says what to do when the cluster does not serve the operator's API.
var errNoCRD = errors.New("no Guardrail CRD in this cluster: install the operator's chart (helm install guardrail-operator charts/guardrail-operator -n guardrail-system --create-namespace), or check --context")

// clients are what the cluster commands read with.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	// namespace is the kubeconfig's (or -n's) namespace.
	namespace string
	// cluster is true when the cluster serves ClusterGuardrails.
	cluster bool
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &clients{kube: kc, dynamic: dc, namespace: ns}
	rl, err := kc.Discovery().ServerResourcesForGroupVersion(gvGuardrail.String())
	switch {
	case apierrors.IsNotFound(err):
		return nil, errNoCRD
	case err != nil:
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	found := false
	for _, r := range rl.APIResources {
		switch r.Name {
		case resGuardrails.Resource:
			found = true
		case resClusterGuardrails.Resource:
			c.cluster = true
		}
	}
	if !found {
		return nil, errNoCRD
	}
	return c, nil
}

// listGuardrails lists the Guardrails of ns ("" for every namespace).
func (c *clients) listGuardrails(ctx context.Context, ns string) ([]api.Guardrail, error) {
	list, err := c.dynamic.Resource(resGuardrails).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, forbiddenHint(err, "list guardrails")
	}
	out := make([]api.Guardrail, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("guardrail %s/%s: %w", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

// listClusterGuardrails lists the ClusterGuardrails, none when the cluster does not serve
// them.
func (c *clients) listClusterGuardrails(ctx context.Context) ([]api.ClusterGuardrail, error) {
	if !c.cluster {
		return nil, nil
	}
	list, err := c.dynamic.Resource(resClusterGuardrails).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, forbiddenHint(err, "list clusterguardrails")
	}
	out := make([]api.ClusterGuardrail, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("clusterguardrail %s: %w", list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

// listClassifiers lists the Classifiers of ns.
func (c *clients) listClassifiers(ctx context.Context, ns string) ([]api.Classifier, error) {
	list, err := c.dynamic.Resource(resClassifiers).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, forbiddenHint(err, "list classifiers")
	}
	out := make([]api.Classifier, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("classifier %s/%s: %w", ns, list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

// listClusterClassifiers lists the ClusterClassifiers, none when not served.
func (c *clients) listClusterClassifiers(ctx context.Context) ([]api.ClusterClassifier, error) {
	if !c.cluster {
		return nil, nil
	}
	list, err := c.dynamic.Resource(resClusterClassifier).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, forbiddenHint(err, "list clusterclassifiers")
	}
	out := make([]api.ClusterClassifier, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("clusterclassifier %s: %w", list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

// forbiddenHint adds what to do to an RBAC refusal.
func forbiddenHint(err error, verb string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w (check with: kubectl auth can-i %s)", err, verb)
	}
	return err
}
