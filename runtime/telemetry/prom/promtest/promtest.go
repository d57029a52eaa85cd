// Package promtest reads a metrics exposition as Prometheus does, for tests: the guard's
// own writer (package prom) is checked against Prometheus's parser, which the guard binary
// itself never links.
package promtest

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse returns the metric families of a text exposition, failing t when Prometheus cannot
// read it. Names are validated by the legacy scheme, which every Prometheus accepts.
func Parse(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus cannot read the exposition: %v\n%s", err, text)
	}
	return families
}
