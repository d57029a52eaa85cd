// Package runtime_test holds the checks on what the guard binary links. The guard runs as
// a sidecar in every injected pod, so each package it links costs resident memory many
// times over; it must not link Kubernetes client libraries. The kubectl plugin and the
// guard contract are checked here too.
package runtime_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/guardrail-dev/guardrail-operator/"

// forbidden are the import path prefixes the guard may not link: Kubernetes modules
// (apimachinery, client-go, controller-runtime, sigs.k8s.io/yaml, …) and the client
// libraries only the operator needs.
var forbidden = []string{
	"k8s.io/",
	"sigs.k8s.io/",
	"github.com/prometheus/client_golang/",
	"google.golang.org/grpc",
	module + "api/v1alpha1", // the Kubernetes objects; api/v1alpha1/spec is checked below
	module + "controllers/",
	module + "internal/policykube",
	module + "cmd/kubectl-guardrail", // the kubectl plugin links client-go and cobra
	"github.com/spf13/cobra",
	// OTLP's generated messages, whose descriptors every guard would register at start,
	// and the SDK's exporters (otlptrace converts spans to them, otlptracegrpc links
	// gRPC): the guard encodes its spans itself (runtime/tracing/otlpwire.go).
	"go.opentelemetry.io/proto/otlp/",
	"go.opentelemetry.io/otel/exporters/",
	// cel-go, the CEL libraries it brings and the manager's type-check of rules built on
	// it: guards evaluate rules with runtime/policy/rulelang.
	"github.com/google/cel-go/",
	"cel.dev/",
	"github.com/antlr4-go/",
	module + "runtime/policy/celcheck",
	module + "internal/rulecheck",
}

// allowed are exceptions to forbidden: the API's specs, which import nothing from
// Kubernetes (their home exists for this check).
var allowed = []string{module + "api/v1alpha1/spec"}

// linked returns the forbidden packages pkg links.
func linked(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg).Output() //nolint:gosec // pkg is one of this file's constants
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		if hasPrefix(dep, allowed) {
			continue
		}
		if hasPrefix(dep, forbidden) {
			bad = append(bad, dep)
		}
	}
	return bad
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestTheGuardLinksNoKubernetesPackage(t *testing.T) {
	if bad := linked(t, module+"cmd/guard"); len(bad) > 0 {
		t.Errorf("the guard links %d packages it must not (each costs memory in every pod): %s\n"+
			"keep Kubernetes types on the operator's side (api/v1alpha1, internal/policykube) "+
			"and give the guard what it needs from api/v1alpha1/spec",
			len(bad), strings.Join(bad, " "))
	}
}

// Of the protobuf runtime the guard links the wire encoding (protowire, and the two
// internal packages it imports) and nothing else: no generated message, whose descriptors
// every guard would register at start, and no reflection-based marshaller. Its spans are
// encoded with protowire (runtime/tracing/otlpwire.go); cel-go, which brought the rest, is
// not linked (forbidden above).
func TestTheGuardLinksOnlyProtobufsWireEncoding(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", module+"cmd/guard").Output() //nolint:gosec // constant arguments
	if err != nil {
		t.Fatal(err)
	}
	wire := []string{
		"google.golang.org/protobuf/encoding/protowire",
		"google.golang.org/protobuf/internal/detrand",
		"google.golang.org/protobuf/internal/errors",
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/protobuf/") && !slices.Contains(wire, dep) {
			t.Errorf("the guard links %s: of protobuf it may link only %v", dep, wire)
		}
	}
}

// The Envoy external processor (cmd/guard-extproc) runs where the gateway runs, with the
// guard's engine: it links gRPC, which it serves, but nothing of Kubernetes or of the
// operator either.
func TestTheExtprocLinksNoKubernetesPackage(t *testing.T) {
	var bad []string
	for _, dep := range linked(t, module+"cmd/guard-extproc") {
		if !strings.HasPrefix(dep, "google.golang.org/grpc") {
			bad = append(bad, dep)
		}
	}
	if len(bad) > 0 {
		t.Errorf("guard-extproc links %d packages it must not: %s", len(bad), strings.Join(bad, " "))
	}
}

// The check sees a forbidden package when one is linked: the operator's adapter links
// apimachinery through api/v1alpha1.
func TestTheCheckFindsKubernetesPackages(t *testing.T) {
	bad := linked(t, module+"internal/policykube")
	if !slices.ContainsFunc(bad, func(dep string) bool { return strings.HasPrefix(dep, "k8s.io/apimachinery/") }) {
		t.Errorf("internal/policykube links apimachinery, but the check found only %v", bad)
	}
}

// The kubectl plugin talks to the apiserver with client-go, as kubectl does; it must not
// link the manager (controller-runtime, the reconcilers, the webhook): what it shares with
// the operator is the guard contract, api/guard/v1.
func TestThePluginLinksNoOperatorPackage(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", module+"cmd/kubectl-guardrail").Output()
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") || strings.HasPrefix(dep, module+"controllers/") {
			bad = append(bad, dep)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the kubectl plugin links %d packages of the operator: %s", len(bad), strings.Join(bad, " "))
	}
}

// The guard contract imports the standard library only, so that the guard, the plugin and
// the operator can all import it.
func TestTheContractImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"api/guard/v1").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != module+"api/guard/v1" {
			t.Errorf("api/guard/v1 imports %s", dep)
		}
	}
}
