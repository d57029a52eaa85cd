package intake

import (
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BatchSchema names the version of the manager's decision-count lines (Options.AuditLog,
// docs/audit-log.md). A change that removes or changes the meaning of a field makes a new
// version; fields may be added within one.
const BatchSchema = "guardrail.dev/decision-count/v1"

// AuditWriter is the manager's audit log when on (its stdout; its own log goes to
// stderr), nil when off.
func AuditWriter(on bool) io.Writer {
	if on {
		return os.Stdout
	}
	return nil
}

// BatchLine is one line of the manager's audit log: how many requests of one guard's
// pod came to one outcome of one guardrail, in one phase and category, in what a batch
// added to what was counted (claim). Names and numbers only: a batch carries no text,
// and validateBatch has refused any name that is not one.
type BatchLine struct {
	Schema             string          `json:"schema"`
	Time               string          `json:"time"`
	Pod                string          `json:"pod"`
	Namespace          string          `json:"namespace"`
	Guardrail          string          `json:"guardrail"`
	GuardrailNamespace string          `json:"guardrailNamespace,omitempty"`
	ClusterScoped      bool            `json:"clusterScoped"`
	Outcome            guardv1.Outcome `json:"outcome"`
	Phase              string          `json:"phase,omitempty"`
	Category           string          `json:"category,omitempty"`
	Code               string          `json:"code,omitempty"`
	Count              int64           `json:"count"`
	// LastDecision is when the guard made the guardrail's last decision it counts.
	LastDecision string `json:"lastDecision,omitempty"`
	// Incarnation is the guard process's, as on its own audit lines.
	Incarnation string `json:"incarnation"`
	// Replica is the manager replica that counted it.
	Replica string `json:"replica,omitempty"`
}

// auditMu serializes the lines of the replica's batches.
var auditMu sync.Mutex

// auditBatch writes a line per part of what a claimed batch of pod's guard added, when
// the audit log is on. Parts come sorted (guardrail, outcome, phase, category, code).
func (in *Intake) auditBatch(pod *metav1.PartialObjectMetadata, incarnation string, deltas batchDelta) {
	if in.opts.AuditLog == nil {
		return
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	names := make([]string, 0, len(deltas.guardrails))
	for name := range deltas.guardrails {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []byte
	for _, name := range names {
		d := deltas.guardrails[name]
		keys := make([]detailKey, 0, len(d.detail))
		for k := range d.detail {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.outcome != b.outcome {
				return a.outcome < b.outcome
			}
			if a.phase != b.phase {
				return a.phase < b.phase
			}
			if a.category != b.category {
				return a.category < b.category
			}
			return a.code < b.code
		})
		l := BatchLine{Schema: BatchSchema, Time: now, Pod: pod.Name, Namespace: pod.Namespace,
			Incarnation: incarnation, Replica: in.opts.Identity}
		if cluster, ok := strings.CutPrefix(name, "/"); ok {
			l.Guardrail, l.ClusterScoped = cluster, true
		} else {
			l.Guardrail, l.GuardrailNamespace = name, pod.Namespace
		}
		if !d.last.IsZero() {
			l.LastDecision = d.last.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		for _, k := range keys {
			if d.detail[k] <= 0 {
				continue
			}
			l.Outcome, l.Phase, l.Category, l.Code, l.Count = k.outcome, k.phase, k.category, k.code, d.detail[k]
			b, err := json.Marshal(l)
			if err != nil {
				continue // plain strings and numbers; does not happen
			}
			out = append(append(out, b...), '\n')
		}
	}
	if len(out) == 0 {
		return
	}
	auditMu.Lock()
	defer auditMu.Unlock()
	if _, err := in.opts.AuditLog.Write(out); err != nil {
		in.opts.Log.Error(err, "Writing the decisions audit log")
	}
}
