// Package policyreport owns the PolicyReport (wgpolicyk8s.io/v1alpha2, the Policy Working
// Group's format that policy tooling reads) of each namespace with Report-mode
// Guardrails: one report per namespace, named guardrail-report-mode, with one result per
// Report-mode Guardrail summarising its decision counters. It is written only when that
// CRD is installed, by the leader, from Guardrail status alone (names and numbers, never
// content), and deleted when the namespace has no Report-mode Guardrail left.
package policyreport
