package intake

import (
	"context"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// flushCalls writes the classifier call figures counted since the last flush into each
// Classifier's status: cumulative calls and errors by code, and the p50 and p99 latency
// of this window's calls. Figures that cannot be written now wait for the next interval.
func (in *Intake) flushCalls(ctx context.Context, calls map[types.NamespacedName]*callDelta) {
	keys := make([]types.NamespacedName, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, key := range keys {
		d := calls[key]
		err := in.writeCalls(ctx, key, d)
		switch {
		case apierrors.IsNotFound(err):
			statusWrites.WithLabelValues("gone").Inc()
		case err != nil:
			statusWrites.WithLabelValues("error").Inc()
			in.opts.Log.Error(err, "Writing call figures into a Classifier's status; retried next interval", "classifier", key.String())
			in.mu.Lock()
			if cur := in.calls[key]; cur != nil {
				d.add(cur)
			}
			in.calls[key] = d
			in.mu.Unlock()
		default:
			statusWrites.WithLabelValues("written").Inc()
		}
	}
}

// writeCalls adds d to a Classifier's (or, for a key without a namespace, a
// ClusterClassifier's) status; a classifier that is gone is a NotFound error.
func (in *Intake) writeCalls(ctx context.Context, key types.NamespacedName, d *callDelta) error {
	fresh := func() client.Object { return &v1alpha1.Classifier{} }
	if key.Namespace == "" {
		fresh = func() client.Object { return &v1alpha1.ClusterClassifier{} }
	}
	obj, err := in.writeStatus(ctx, key, fresh, func(o client.Object) {
		switch c := o.(type) {
		case *v1alpha1.Classifier:
			addCalls(&c.Status, d)
		case *v1alpha1.ClusterClassifier:
			addCalls(&c.Status, d)
		}
	})
	if err == nil && obj == nil {
		return apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("classifiers").GroupResource(), key.Name)
	}
	return err
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
			i = min(i, len(cp.LatencyBucketsMs)-1)
			return time.Duration(cp.LatencyBucketsMs[i]) * time.Millisecond, true
		}
	}
	return time.Duration(cp.LatencyBucketsMs[len(cp.LatencyBucketsMs)-1]) * time.Millisecond, true
}
