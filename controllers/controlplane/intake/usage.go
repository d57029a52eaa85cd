package intake

import (
	"context"
	"math"
	"sort"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Usage of ModelProviders (keyless apps): a guard reports, per provider it
// called, cumulative requests and the tokens of the provider's usage fields for its
// incarnation (guardv1.DecisionsRequest.Providers). The difference not yet counted is claimed
// on the guard's Lease with the decisions (claim.go), after the entries the pod's guard
// could not have made are dropped (providers.go); it is buffered per provider and
// namespace and added to the ModelProvider's status.usage at most once per interval, and
// to the metrics guardrail_provider_requests_total and guardrail_provider_tokens_total
// as it is claimed. Numbers and names only: never a prompt, a completion or a credential.

// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders/status,verbs=get;patch

// maxTokensPerRequest bounds the tokens one request may account for in the plausibility
// check: the largest context windows hold about two million tokens.
const maxTokensPerRequest = 2_000_000

// usageDelta is what a batch (or an interval) adds to one provider's usage.
type usageDelta struct {
	requests, input, output int64
}

func (d *usageDelta) add(o usageDelta) {
	d.requests, d.input, d.output = satAdd(d.requests, o.requests), satAdd(d.input, o.input), satAdd(d.output, o.output)
}

func (d usageDelta) empty() bool { return d == usageDelta{} }

// within reports whether one guard can have sent d's requests and been answered d's
// tokens in the time limit (plausibleLimit) stands for.
func (d usageDelta) within(limit int64) bool {
	tokens := limit
	if limit > math.MaxInt64/maxTokensPerRequest {
		tokens = math.MaxInt64
	} else {
		tokens *= maxTokensPerRequest
	}
	return d.requests <= limit && d.input <= tokens && d.output <= tokens
}

// figures is d as status figures.
func (d usageDelta) figures() v1alpha1.UsageFigures {
	return v1alpha1.UsageFigures{Requests: d.requests, InputTokens: d.input, OutputTokens: d.output}
}

// validateUsage refuses a batch whose usage no guard sends: more providers than a guard
// keeps, a name that is not a ModelProvider's (a DNS subdomain), a provider twice, or a
// negative figure.
func validateUsage(usage []guardv1.ProviderUsage) error {
	if len(usage) > guardv1.MaxProviders {
		return &refusal{413, "too_large", "the batch reports on more providers than a guard keeps"}
	}
	seen := make(map[string]bool, len(usage))
	for _, u := range usage {
		if len(validation.IsDNS1123Subdomain(u.Provider)) > 0 || seen[u.Provider] {
			return &refusal{400, "bad_request", "a provider's usage is named by its ModelProvider, once"}
		}
		seen[u.Provider] = true
		if u.Requests < 0 || u.InputTokens < 0 || u.OutputTokens < 0 {
			return &refusal{400, "bad_request", "provider usage out of range"}
		}
	}
	return nil
}

// claimUsage merges a batch's cumulative usage into what was claimed (per provider and
// figure, the maximum: a batch resent or reordered adds nothing and lowers nothing) and
// returns the merge, sorted by provider, and what it adds per provider.
func claimUsage(prev, cur []guardv1.ProviderUsage) ([]guardv1.ProviderUsage, map[string]usageDelta) {
	merged := make(map[string]guardv1.ProviderUsage, len(prev)+len(cur))
	for _, p := range prev {
		merged[p.Provider] = p
	}
	var deltas map[string]usageDelta
	for _, c := range cur {
		p := merged[c.Provider]
		d := usageDelta{requests: max(0, c.Requests-p.Requests), input: max(0, c.InputTokens-p.InputTokens),
			output: max(0, c.OutputTokens-p.OutputTokens)}
		merged[c.Provider] = guardv1.ProviderUsage{Provider: c.Provider, Requests: max(p.Requests, c.Requests),
			InputTokens: max(p.InputTokens, c.InputTokens), OutputTokens: max(p.OutputTokens, c.OutputTokens)}
		if !d.empty() {
			if deltas == nil {
				deltas = map[string]usageDelta{}
			}
			deltas[c.Provider] = d
		}
	}
	var out []guardv1.ProviderUsage
	for _, p := range merged {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out, deltas
}

// addUsageTo buffers usage claimed from a guard of namespace ns into to (by provider
// and namespace) and counts it in the metrics.
func addUsageTo(to map[string]map[string]*usageDelta, ns string, usage map[string]usageDelta) {
	for name, d := range usage {
		if to[name] == nil {
			to[name] = map[string]*usageDelta{}
		}
		if to[name][ns] == nil {
			to[name][ns] = &usageDelta{}
		}
		to[name][ns].add(d)
		providerRequests.WithLabelValues(name, ns).Add(float64(d.requests))
		providerTokens.WithLabelValues(name, ns, "input").Add(float64(d.input))
		providerTokens.WithLabelValues(name, ns, "output").Add(float64(d.output))
	}
}

// writeUsage adds a provider's usage, by namespace, to its status.usage under the mark of
// writer's epoch; gone says the ModelProvider no longer exists.
func (in *Intake) writeUsage(ctx context.Context, name string, byNS map[string]*usageDelta, writer string, epoch int64) (gone bool, err error) {
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var hit []reached
	obj, landed, err := in.writeStatus(ctx, types.NamespacedName{Name: name}, func() client.Object { return &v1alpha1.ModelProvider{} },
		usageMarks, func(o client.Object) {
			mp := o.(*v1alpha1.ModelProvider)
			hit = nil
			now := timeNow()
			for _, ns := range namespaces {
				addUsage(&mp.Status, ns, *byNS[ns])
				if mp.Spec.Limits != nil || mp.Status.Budgets != nil {
					hit = append(hit, addBudget(mp, ns, *byNS[ns], now)...)
				}
			}
		}, writer, epoch)
	if err == nil && obj != nil && !landed && len(hit) > 0 {
		in.budgetReached(obj.(*v1alpha1.ModelProvider), hit)
	}
	return err == nil && obj == nil, err
}

// budgetReached reports the limits a write made namespaces reach: one Event on the
// ModelProvider and the metric.
func (in *Intake) budgetReached(mp *v1alpha1.ModelProvider, hit []reached) {
	mode := v1alpha1.BudgetModeReport
	if mp.Spec.Limits != nil && mp.Spec.Limits.Mode == v1alpha1.BudgetModeEnforce {
		mode = v1alpha1.BudgetModeEnforce
	}
	for _, r := range hit {
		budgetReached.WithLabelValues(mp.Name, r.namespace, r.budget, string(mode)).Inc()
	}
	if in.opts.Recorder == nil {
		return
	}
	typ, reason, msg := budgetEvent(mode, hit)
	in.opts.Recorder.Eventf(mp, nil, typ, reason, "Budget", "%s", msg)
}

var usageMarks = marks{
	get: func(o client.Object) []string {
		if u := o.(*v1alpha1.ModelProvider).Status.Usage; u != nil {
			return u.Writes
		}
		return nil
	},
	set: func(o client.Object, m []string) {
		st := &o.(*v1alpha1.ModelProvider).Status
		if st.Usage == nil {
			st.Usage = &v1alpha1.ProviderUsage{}
		}
		st.Usage.Writes = m
	},
}

// addUsage adds what guards of namespace ns counted to a ModelProvider's status.usage:
// to the totals, and to the breakdown of at most v1alpha1.MaxNamespacesListed namespaces
// with the most tokens. A listed namespace gets it; an unlisted one joins the list while
// it has room, or takes the place of the listed namespace with the fewest tokens when it
// brings more than that one has (the heavy hitters of the space-saving algorithm), whose
// figures go to otherNamespaces; otherwise it goes to otherNamespaces. Invariant: the
// listed namespaces plus otherNamespaces sum to the totals. otherNamespaces.namespaces
// counts the namespaces that left the list: a namespace never listed is summed there
// without being counted, since status does not remember which namespaces it holds.
func addUsage(st *v1alpha1.ModelProviderStatus, ns string, d usageDelta) {
	if st.Usage == nil {
		st.Usage = &v1alpha1.ProviderUsage{}
	}
	u := st.Usage
	addFigures(&u.UsageFigures, d.figures())
	for i := range u.Namespaces {
		if u.Namespaces[i].Namespace == ns {
			addFigures(&u.Namespaces[i].UsageFigures, d.figures())
			return
		}
	}
	defer sort.Slice(u.Namespaces, func(i, j int) bool { return u.Namespaces[i].Namespace < u.Namespaces[j].Namespace })
	if len(u.Namespaces) < v1alpha1.MaxNamespacesListed {
		u.Namespaces = append(u.Namespaces, v1alpha1.NamespaceUsage{Namespace: ns, UsageFigures: d.figures()})
		return
	}
	if u.OtherNamespaces == nil {
		u.OtherNamespaces = &v1alpha1.OtherNamespacesUsage{}
	}
	victim := 0
	for i := range u.Namespaces {
		if tokens(u.Namespaces[i].UsageFigures) < tokens(u.Namespaces[victim].UsageFigures) {
			victim = i
		}
	}
	v := &u.Namespaces[victim]
	if tokens(d.figures()) <= tokens(v.UsageFigures) {
		addFigures(&u.OtherNamespaces.UsageFigures, d.figures())
		return
	}
	u.OtherNamespaces.Namespaces++
	addFigures(&u.OtherNamespaces.UsageFigures, v.UsageFigures)
	*v = v1alpha1.NamespaceUsage{Namespace: ns, UsageFigures: d.figures()}
}

// tokens is the weight of a namespace in the breakdown.
func tokens(f v1alpha1.UsageFigures) int64 { return satAdd(f.InputTokens, f.OutputTokens) }

func addFigures(to *v1alpha1.UsageFigures, f v1alpha1.UsageFigures) {
	to.Requests = satAdd(to.Requests, f.Requests)
	to.InputTokens = satAdd(to.InputTokens, f.InputTokens)
	to.OutputTokens = satAdd(to.OutputTokens, f.OutputTokens)
}
