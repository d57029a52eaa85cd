package telemetry

import (
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// mcpMetrics are the metrics of the guard's MCP front (runtime/mcp), labelled by the MCP
// server's configured name: the guard serves only the names its flags configure, so the
// label is bounded as the others are. Decisions on MCP traffic also count in
// guard_decisions_total, by guardrail, as model traffic's do.
type mcpMetrics struct {
	requests  *prom.CounterVec
	decisions *prom.CounterVec
	hidden    *prom.CounterVec
	added     *prom.HistogramVec
}

func newMCPMetrics(reg *prom.Registry) *mcpMetrics {
	return &mcpMetrics{
		requests: reg.NewCounterVec(prom.Opts{
			Name: "guard_mcp_requests_total",
			Help: "Requests to MCP servers through the guard, by server and outcome (allowed, blocked, failed, refused, upstream_error, client_gone).",
		}, "server", "outcome"),
		decisions: reg.NewCounterVec(prom.Opts{
			Name: "guard_mcp_decisions_total",
			Help: "Guardrail evaluations of MCP traffic, by server, phase and outcome.",
		}, "server", "phase", "outcome"),
		hidden: reg.NewCounterVec(prom.Opts{
			Name: "guard_mcp_tools_hidden_total",
			Help: "Tools removed from MCP tools/list answers because a guardrail blocked their description or schema, by server.",
		}, "server"),
		added: reg.NewHistogramVec(prom.HistogramOpts{
			Name:    "guard_mcp_added_latency_seconds",
			Help:    "Time the guard spent judging an MCP request or message, by server.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, "server"),
	}
}

// MCPRequest counts a request to MCP server (a configured name) by its outcome.
func (t *Telemetry) MCPRequest(server, outcome string) {
	t.mcp.requests.WithLabelValues(server, outcome).Inc()
}

// MCPDecision counts a decision record made on MCP server's traffic; the record itself
// goes through Request.Record as every other.
func (t *Telemetry) MCPDecision(server string, r engine.Record) {
	t.mcp.decisions.WithLabelValues(server, r.Phase.String(), string(r.Outcome)).Inc()
}

// MCPToolHidden counts a tool removed from MCP server's tool list.
func (t *Telemetry) MCPToolHidden(server string) { t.mcp.hidden.WithLabelValues(server).Inc() }

// MCPAdded observes time the guard spent judging MCP server's traffic.
func (t *Telemetry) MCPAdded(server string, d time.Duration) {
	t.mcp.added.WithLabelValues(server).Observe(d.Seconds())
}
