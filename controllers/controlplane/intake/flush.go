package intake

import (
	"context"
	"slices"
	"sort"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// itemKind tells the three kinds of status an epoch writes.
type itemKind byte

const (
	kindDecisions itemKind = 'g' // a Guardrail's or ClusterGuardrail's status.decisions
	kindCalls     itemKind = 'c' // a Classifier's or ClusterClassifier's status.calls
	kindUsage     itemKind = 'p' // a ModelProvider's status.usage
)

// buffers are the deltas claimed in one epoch, per object.
type buffers struct {
	decisions map[types.NamespacedName]*pendingDecisions
	calls     map[types.NamespacedName]*callDelta
	// usage is by provider and namespace (usage.go).
	usage map[string]map[string]*usageDelta
	// doubts are claims whose Lease write had an unknown outcome (doubt.go).
	doubts []*doubt
}

func newBuffers() buffers {
	return buffers{decisions: map[types.NamespacedName]*pendingDecisions{}, calls: map[types.NamespacedName]*callDelta{},
		usage: map[string]map[string]*usageDelta{}}
}

func (b *buffers) empty() bool {
	return len(b.decisions) == 0 && len(b.calls) == 0 && len(b.usage) == 0 && len(b.doubts) == 0
}

// holds reports whether the buffers still hold the object kind/key (for usage, the
// provider's name).
func (b *buffers) holds(kind itemKind, key types.NamespacedName) bool {
	switch kind {
	case kindDecisions:
		return b.decisions[key] != nil
	case kindCalls:
		return b.calls[key] != nil
	case kindUsage:
		return b.usage[key.Name] != nil
	}
	return false
}

// add buffers a claimed delta of pod for Guardrails and Classifiers of namespace ns, and
// for the ModelProviders it used, and counts it in the metrics.
func (b *buffers) add(ns, pod string, bd batchDelta, samples []guardv1.Sample) {
	addUsageTo(b.usage, ns, bd.providers)
	for name, d := range bd.classifiers {
		key := objectKey(ns, name)
		if b.calls[key] == nil {
			b.calls[key] = &callDelta{}
		}
		b.calls[key].add(d)
	}
	for name, d := range bd.guardrails {
		key := objectKey(ns, name)
		p := b.decisions[key]
		if p == nil {
			p = &pendingDecisions{delta: newDelta(), since: time.Now(), pods: map[string]struct{}{}, samples: map[guardv1.Outcome]guardv1.Sample{}}
			b.decisions[key] = p
		}
		p.add(d)
		if key.Namespace == "" {
			p.addNamespace(ns, d)
		}
		if _, ok := p.pods[pod]; !ok && pod != "" {
			p.podsAll++
			if len(p.pods) < maxPodsKept {
				p.pods[pod] = struct{}{}
			}
		}
		for _, s := range samples {
			if localName(s.Guardrail) != name || d.outcomes[s.Outcome] == 0 {
				continue
			}
			if _, ok := p.samples[s.Outcome]; !ok {
				p.samples[s.Outcome] = s
			}
		}
		for outcome, n := range d.outcomes {
			decisionsCounted.WithLabelValues(key.Namespace+"/"+key.Name, string(outcome)).Add(float64(n))
		}
	}
}

// epochBatch is what one flush cut: the buffers of one epoch, written under the mark of
// (writer, epoch). Items leave as they reach status; the batch is kept until none is left.
type epochBatch struct {
	buffers
	writer string
	epoch  int64
}

// landed reports whether the part of writer's epoch for object kind/key has reached
// status (or its object is gone): the epoch was cut and its batch no longer holds the
// object. The caller holds in.mu.
func (in *Intake) landed(writer string, epoch int64, kind itemKind, key types.NamespacedName) bool {
	if writer != in.writer || epoch >= in.epoch {
		return false
	}
	for _, b := range in.unwritten {
		if b.epoch == epoch {
			return !b.holds(kind, key) && len(b.doubts) == 0
		}
	}
	return true
}

// flush cuts the current epoch and writes every epoch not yet written, oldest first: an
// object's epochs reach it in order (its mark says which did). What cannot be written now
// stays, under its epoch and mark, for the next flush; so does what comes after it for the
// same object.
func (in *Intake) flush(ctx context.Context) {
	in.flushing.Lock()
	defer in.flushing.Unlock()
	in.cut.Lock()
	in.mu.Lock()
	if !in.cur.empty() {
		in.unwritten = append(in.unwritten, &epochBatch{buffers: in.cur, writer: in.writer, epoch: in.epoch})
	}
	in.cur = newBuffers()
	in.epoch++
	batches := slices.Clone(in.unwritten)
	in.mu.Unlock()
	in.cut.Unlock()

	blocked := map[itemID]bool{}
	for _, b := range batches {
		if !in.resolveDoubts(ctx, b) {
			break // a claim of unknown outcome: what comes after waits for it
		}
		in.writeBatch(ctx, b, blocked)
	}
	in.mu.Lock()
	in.unwritten = slices.DeleteFunc(in.unwritten, func(b *epochBatch) bool { return b.empty() })
	in.mu.Unlock()
}

type itemID struct {
	kind itemKind
	key  types.NamespacedName
}

// writeBatch writes what b holds, except objects blocked by an earlier epoch's failure.
func (in *Intake) writeBatch(ctx context.Context, b *epochBatch, blocked map[itemID]bool) {
	done := func(kind itemKind, key types.NamespacedName) {
		in.mu.Lock()
		defer in.mu.Unlock()
		switch kind {
		case kindDecisions:
			delete(b.decisions, key)
		case kindCalls:
			delete(b.calls, key)
		case kindUsage:
			delete(b.usage, key.Name)
		}
	}
	fail := func(kind itemKind, key types.NamespacedName, err error, what string) {
		blocked[itemID{kind, key}] = true
		statusWrites.WithLabelValues("error").Inc()
		in.opts.Log.Error(err, "Writing "+what+"; retried next interval", "object", key.String())
	}
	for _, key := range sortedKeys(b.calls) {
		if blocked[itemID{kindCalls, key}] || !in.mayWrite(b) {
			continue
		}
		err := in.writeCalls(ctx, key, b.calls[key], b.writer, b.epoch)
		switch {
		case apierrors.IsNotFound(err):
			statusWrites.WithLabelValues("gone").Inc()
			done(kindCalls, key)
		case err != nil:
			fail(kindCalls, key, err, "call figures into a Classifier's status")
		default:
			statusWrites.WithLabelValues("written").Inc()
			done(kindCalls, key)
		}
	}
	providers := make([]string, 0, len(b.usage))
	for name := range b.usage {
		providers = append(providers, name)
	}
	sort.Strings(providers)
	for _, name := range providers {
		key := types.NamespacedName{Name: name}
		if blocked[itemID{kindUsage, key}] || !in.mayWrite(b) {
			continue
		}
		gone, err := in.writeUsage(ctx, name, b.usage[name], b.writer, b.epoch)
		switch {
		case err != nil:
			fail(kindUsage, key, err, "usage into a ModelProvider's status")
		case gone:
			statusWrites.WithLabelValues("gone").Inc()
			providerRequests.DeletePartialMatch(map[string]string{"provider": name})
			providerTokens.DeletePartialMatch(map[string]string{"provider": name})
			budgetReached.DeletePartialMatch(map[string]string{"provider": name})
			done(kindUsage, key)
		default:
			statusWrites.WithLabelValues("written").Inc()
			done(kindUsage, key)
		}
	}
	for _, key := range sortedKeys(b.decisions) {
		if blocked[itemID{kindDecisions, key}] || !in.mayWrite(b) {
			continue
		}
		p := b.decisions[key]
		write := in.write
		if key.Namespace == "" {
			write = in.writeCluster
		}
		g, already, err := write(ctx, key, p, b.writer, b.epoch)
		switch {
		case err != nil:
			fail(kindDecisions, key, err, "decisions into a Guardrail's status")
		case g == nil:
			statusWrites.WithLabelValues("gone").Inc()
			for _, o := range guardv1.Outcomes {
				decisionsCounted.DeleteLabelValues(key.String(), string(o))
			}
			done(kindDecisions, key)
		default:
			statusWrites.WithLabelValues("written").Inc()
			if !already {
				in.emit(g, p)
			}
			done(kindDecisions, key)
		}
	}
}

func sortedKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
