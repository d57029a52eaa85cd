package gitops

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// fluxKustomization is the part of config/gitops/flux/kustomization.yaml under test.
type fluxKustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Wait             bool             `json:"wait"`
		HealthCheckExprs []fluxHealthExpr `json:"healthCheckExprs"`
	} `json:"spec"`
}

// fluxHealthExpr is an entry of spec.healthCheckExprs.
type fluxHealthExpr struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

// fluxStatusOf is the status each Argo CD health status must meet in Flux. Progressing
// is neither current nor failed: Flux keeps waiting, as Argo CD does.
var fluxStatusOf = map[string]status.Status{
	"Healthy":     status.CurrentStatus,
	"Degraded":    status.FailedStatus,
	"Progressing": status.InProgressStatus,
}

// TestFluxHealthCheckExprsAgreeWithArgoCD evaluates the Flux Kustomization's health check
// expressions, as kustomize-controller does, on the fixtures of the Argo CD health checks of
// the same kind, and expects the same verdict: Healthy is Current, Degraded is Failed,
// Progressing is InProgress.
func TestFluxHealthCheckExprsAgreeWithArgoCD(t *testing.T) {
	path := filepath.Join(envtestutil.RepoRoot(), "config", "gitops", "flux", "kustomization.yaml")
	var ks fluxKustomization
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &ks); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if ks.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || ks.Kind != "Kustomization" {
		t.Fatalf("%s is a %s %s, want a kustomize.toolkit.fluxcd.io/v1 Kustomization", path, ks.APIVersion, ks.Kind)
	}
	if !ks.Spec.Wait {
		t.Errorf("%s: spec.wait is not true: without it Flux health-checks nothing it is not told to", path)
	}
	exprs := map[string]fluxHealthExpr{}
	for _, e := range ks.Spec.HealthCheckExprs {
		group, _, _ := strings.Cut(e.APIVersion, "/")
		exprs[group+"/"+e.Kind] = e
	}

	for _, c := range healthChecks(t) {
		e, ok := exprs[c.Group+"/"+c.Kind]
		if !ok {
			t.Errorf("%s has no healthCheckExprs entry for %s/%s", path, c.Group, c.Kind)
			continue
		}
		t.Run(c.Kind, func(t *testing.T) {
			eval, err := newFluxEvaluator(e)
			if err != nil {
				t.Fatalf("%s, %s: %v", path, c.Kind, err)
			}
			for _, tc := range c.Tests.Tests {
				t.Run(caseName(tc.InputPath, tc.HealthStatus.Status), func(t *testing.T) {
					want, ok := fluxStatusOf[tc.HealthStatus.Status]
					if !ok {
						t.Fatalf("no Flux counterpart to Argo CD's %s: decide one and add it to fluxStatusOf", tc.HealthStatus.Status)
					}
					obj := c.object(t, tc.InputPath)
					got, err := eval.evaluate(context.Background(), obj)
					if _, hasStatus := obj["status"]; !hasStatus && want == status.InProgressStatus {
						// `status` is not defined in the expressions: kustomize-controller
						// reports the error as an Unknown status and polls again, which
						// waits like InProgress.
						if err == nil || !strings.Contains(err.Error(), "no such attribute(s): status") {
							t.Fatalf("an object without status: got %s, %v; want cel-go's \"no such attribute(s): status...\"", got, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("Flux judges %s %s; Argo CD's %s is %s", tc.InputPath, got, tc.HealthStatus.Status, want)
					}
				})
			}
		})
	}
}

// fluxEvaluator is kustomize-controller's evaluation of one healthCheckExprs entry
// (github.com/fluxcd/pkg/runtime/cel, StatusEvaluator, after RFC-0009), rebuilt on cel-go
// with the same environment: expressions are parsed, not type-checked, and see the object's
// top-level fields (apiVersion, kind, metadata, spec, status) as variables.
type fluxEvaluator struct {
	inProgress, failed, current cel.Program
}

func newFluxEvaluator(e fluxHealthExpr) (*fluxEvaluator, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	program := func(name, expr string) (cel.Program, error) {
		if expr == "" {
			return nil, nil
		}
		parsed, iss := env.Parse(expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("%s: %w", name, iss.Err())
		}
		return env.Program(parsed, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	}
	if e.Current == "" {
		return nil, fmt.Errorf("current is required")
	}
	var f fluxEvaluator
	if f.inProgress, err = program("inProgress", e.InProgress); err != nil {
		return nil, err
	}
	if f.failed, err = program("failed", e.Failed); err != nil {
		return nil, err
	}
	if f.current, err = program("current", e.Current); err != nil {
		return nil, err
	}
	return &f, nil
}

// evaluate returns the status Flux gives obj: InProgress while status.observedGeneration,
// when present, differs from metadata.generation; then the first of inProgress, failed and
// current that is true; InProgress when none is. An evaluation error is returned as is,
// with status Unknown.
func (f *fluxEvaluator) evaluate(ctx context.Context, obj map[string]any) (status.Status, error) {
	observed, found, err := unstructured.NestedInt64(obj, "status", "observedGeneration")
	if err != nil {
		return status.UnknownStatus, err
	}
	if found {
		generation, found, err := unstructured.NestedInt64(obj, "metadata", "generation")
		if err != nil {
			return status.UnknownStatus, err
		}
		if found && observed != generation {
			return status.InProgressStatus, nil
		}
	}
	for _, step := range []struct {
		prg    cel.Program
		status status.Status
	}{
		{f.inProgress, status.InProgressStatus},
		{f.failed, status.FailedStatus},
		{f.current, status.CurrentStatus},
	} {
		if step.prg == nil {
			continue
		}
		val, _, err := step.prg.ContextEval(ctx, obj)
		if err != nil {
			return status.UnknownStatus, err
		}
		b, ok := val.(types.Bool)
		if !ok {
			return status.UnknownStatus, fmt.Errorf("the expression for %s returned %s, not a bool", step.status, val.Type())
		}
		if b {
			return step.status, nil
		}
	}
	return status.InProgressStatus, nil
}
