package injection

import (
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

// The files the guard reads at the contract's paths are in the volumes the injector mounts.
func TestTheContractsPathsAreWhereTheInjectorMounts(t *testing.T) {
	for path, want := range map[string]string{
		guardv1.TokenPath:  tokenDir + "/token",
		guardv1.CAPath:     caDir + "/ca.crt",
		guardv1.LabelsPath: podInfoDir + "/labels",
	} {
		if path != want {
			t.Errorf("the guard reads %s, the injector mounts %s", path, want)
		}
	}
}
