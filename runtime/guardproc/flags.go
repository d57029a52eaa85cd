package guardproc

import (
	"fmt"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
)

// PodLabels parses --pod-labels (k=v,...): nil when s is empty, which selects every
// guardrail.
func PodLabels(s string) (labels.Set, error) {
	if s == "" {
		return nil, nil
	}
	set, err := labels.ParseSet(s)
	if err != nil {
		return nil, fmt.Errorf("--pod-labels: %w", err)
	}
	return set, nil
}

// PassThrough splits --pass-through: comma-separated POST paths forwarded unguarded.
func PassThrough(s string) []string {
	var paths []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, p)
		}
	}
	return paths
}
