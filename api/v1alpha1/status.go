package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GetConditions returns the status conditions.
func (c *Classifier) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the status conditions.
func (c *Classifier) SetConditions(conds []metav1.Condition) { c.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (c *Classifier) GetObservedGeneration() int64 { return c.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (c *Classifier) SetObservedGeneration(g int64) { c.Status.ObservedGeneration = g }

// GetConditions returns the status conditions.
func (g *Guardrail) GetConditions() []metav1.Condition { return g.Status.Conditions }

// SetConditions replaces the status conditions.
func (g *Guardrail) SetConditions(conds []metav1.Condition) { g.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (g *Guardrail) GetObservedGeneration() int64 { return g.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (g *Guardrail) SetObservedGeneration(gen int64) { g.Status.ObservedGeneration = gen }
