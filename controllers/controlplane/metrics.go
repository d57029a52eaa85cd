package controlplane

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metrics of the control-plane server, served on the manager's metrics endpoint. Label
// sets are bounded: namespaces, and fixed reasons and results.
type metrics struct {
	subscribers  *prometheus.GaugeVec
	refused      *prometheus.CounterVec
	tokenReviews prometheus.Counter
	sent         prometheus.Counter
	compiles     prometheus.Counter
	unchanged    prometheus.Counter
	snapshots    prometheus.Gauge
	evictions    *prometheus.CounterVec
	acks         *prometheus.CounterVec
	ackErrors    prometheus.Counter
	leaseWrites  *prometheus.CounterVec
}

var serverMetrics = &metrics{
	subscribers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "guardrail_controlplane_subscribers",
		Help: "Guards subscribed to this replica, by namespace.",
	}, []string{"namespace"}),
	refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_refused_total",
		Help: "Subscriptions refused, by reason (missing_token, unauthenticated, wrong_audience, not_pod_bound, pod_not_found, " +
			"not_a_guard: the pod's spec does not carry the injected guard, bad_request).",
	}, []string{"reason"}),
	tokenReviews: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_tokenreviews_total",
		Help: "TokenReviews sent to the apiserver (reviews are cached for the token's lifetime).",
	}),
	sent: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_snapshots_sent_total",
		Help: "Policy snapshots sent to guards.",
	}),
	compiles: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_compiles_total",
		Help: "Policy snapshots compiled: at most one per namespace and set of policies a guard asks for, per change.",
	}),
	unchanged: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_compiles_unchanged_total",
		Help: "Policy snapshots rebuilt after a change that did not alter them (the previous compile was kept).",
	}),
	snapshots: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "guardrail_controlplane_snapshots",
		Help: "Policy snapshots held by this replica: one per namespace and set of policies guards ask for, at most 64 per namespace.",
	}),
	evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_snapshot_evictions_total",
		Help: "Policy snapshots evicted, least recently used first, because their namespace had 64 (its pods' labels select that many different sets of policies).",
	}, []string{"namespace"}),
	acks: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_acks_total",
		Help: "Changed acknowledgements recorded on guards' Leases, by result (applied, refused).",
	}, []string{"result"}),
	ackErrors: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_ack_errors_total",
		Help: "Acknowledgements and heartbeats that could not be recorded on the guard's Lease (retried on its next poll).",
	}),
	leaseWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_lease_writes_total",
		Help: "Writes of guards' Leases by polls, by kind (created, acked: the acknowledgement changed, renewed: " +
			"the heartbeat only, at most once per third of the Lease duration per guard).",
	}, []string{"kind"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(serverMetrics.subscribers, serverMetrics.refused, serverMetrics.tokenReviews,
		serverMetrics.sent, serverMetrics.compiles, serverMetrics.unchanged, serverMetrics.snapshots, serverMetrics.evictions, serverMetrics.acks, serverMetrics.ackErrors, serverMetrics.leaseWrites)
}
