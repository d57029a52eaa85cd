package intake

import (
	"context"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// writeCalls adds d to a Classifier's (or, for a key without a namespace, a
// ClusterClassifier's) status under the mark of writer's epoch: cumulative calls and
// errors by code, and the p50 and p99 latency of this window's calls. A classifier that
// is gone is a NotFound error.
func (in *Intake) writeCalls(ctx context.Context, key types.NamespacedName, d *callDelta, writer string, epoch int64) error {
	fresh := func() client.Object { return &v1alpha1.Classifier{} }
	if key.Namespace == "" {
		fresh = func() client.Object { return &v1alpha1.ClusterClassifier{} }
	}
	obj, _, err := in.writeStatus(ctx, key, fresh, callMarks, func(o client.Object) {
		addCalls(classifierStatus(o), d)
	}, writer, epoch)
	if err == nil && obj == nil {
		return apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("classifiers").GroupResource(), key.Name)
	}
	return err
}

func classifierStatus(o client.Object) *v1alpha1.ClassifierStatus {
	switch c := o.(type) {
	case *v1alpha1.Classifier:
		return &c.Status
	case *v1alpha1.ClusterClassifier:
		return &c.Status
	}
	return nil
}

var callMarks = marks{
	get: func(o client.Object) []string {
		if st := classifierStatus(o); st != nil && st.Calls != nil {
			return st.Calls.Writes
		}
		return nil
	},
	set: func(o client.Object, m []string) {
		st := classifierStatus(o)
		if st.Calls == nil {
			st.Calls = &v1alpha1.ClassifierCallStats{}
		}
		st.Calls.Writes = m
	},
}

// addCalls adds a window's figures to a Classifier's status.
func addCalls(st *v1alpha1.ClassifierStatus, d *callDelta) {
	if st.Calls == nil {
		st.Calls = &v1alpha1.ClassifierCallStats{}
	}
	c := st.Calls
	c.Total = satAdd(c.Total, d.calls)
	for code, n := range d.errors {
		if c.Errors == nil {
			c.Errors = map[string]int64{}
		}
		c.Errors[code] = satAdd(c.Errors[code], n)
	}
	if p50, ok := percentile(d.latency, 0.50); ok {
		c.LatencyP50 = &metav1.Duration{Duration: p50}
	}
	if p99, ok := percentile(d.latency, 0.99); ok {
		c.LatencyP99 = &metav1.Duration{Duration: p99}
	}
}

// percentile is the upper bound of the histogram bucket holding the q-quantile: "p99 ≤
// 200ms". Calls above the largest bound report that bound.
func percentile(latency []int64, q float64) (time.Duration, bool) {
	var total int64
	for _, n := range latency {
		total = satAdd(total, n)
	}
	if total == 0 {
		return 0, false
	}
	rank := int64(q*float64(total) + 0.999999)
	var seen int64
	for i, n := range latency {
		seen = satAdd(seen, n)
		if seen >= rank {
			i = min(i, len(guardv1.LatencyBucketsMs)-1)
			return time.Duration(guardv1.LatencyBucketsMs[i]) * time.Millisecond, true
		}
	}
	return time.Duration(guardv1.LatencyBucketsMs[len(guardv1.LatencyBucketsMs)-1]) * time.Millisecond, true
}
