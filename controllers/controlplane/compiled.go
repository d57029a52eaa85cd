package controlplane

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// maxCompiledSets bounds the sets compiledSets remembers; past it, it starts afresh.
const maxCompiledSets = 512

// compiledSets remembers, per set of sources (every object as the guard reads it, and a
// hash of each credential), which of them compile together: compiling is what a snapshot
// costs, and the same set is asked for again whenever a change elsewhere in the
// namespace (a relabel, another Guardrail) makes the hub rebuild a snapshot that did not
// change. A policy is therefore compiled once per generation of the sets it is part of,
// not once per rebuild. Only hashes and names are kept, never a credential.
type compiledSets struct {
	mu   sync.Mutex
	sets map[[32]byte]compiledSet
	// compiles counts the sets compiled rather than remembered (tests, benchmarks).
	compiles int
}

// compiledSet is what compilable found of one set.
type compiledSet struct {
	keptClassifiers, keptGuardrails []string
	excluded                        []string
	err                             error
}

// compilable is compilable(src), remembered by the set's content.
func (c *compiledSets) compilable(src policy.Sources) (policy.Sources, []string, error) {
	key, ok := setKey(src)
	if ok {
		c.mu.Lock()
		r, hit := c.sets[key]
		c.mu.Unlock()
		if hit {
			return r.apply(src), slices.Clone(r.excluded), r.err
		}
	}
	out, excluded, err := compilable(src)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compiles++
	if !ok {
		return out, excluded, err
	}
	if c.sets == nil || len(c.sets) >= maxCompiledSets {
		c.sets = map[[32]byte]compiledSet{}
	}
	r := compiledSet{excluded: slices.Clone(excluded), err: err}
	for i := range out.Classifiers {
		r.keptClassifiers = append(r.keptClassifiers, out.Classifiers[i].Kind+" "+out.Classifiers[i].Key())
	}
	for i := range out.Guardrails {
		r.keptGuardrails = append(r.keptGuardrails, out.Guardrails[i].Kind+" "+out.Guardrails[i].Key())
	}
	c.sets[key] = r
	return out, excluded, err
}

// apply keeps of src what compiled when the set was first compiled.
func (r compiledSet) apply(src policy.Sources) policy.Sources {
	out := policy.Sources{Tokens: src.Tokens}
	for _, cl := range src.Classifiers {
		if slices.Contains(r.keptClassifiers, cl.Kind+" "+cl.Key()) {
			out.Classifiers = append(out.Classifiers, cl)
		}
	}
	for _, g := range src.Guardrails {
		if slices.Contains(r.keptGuardrails, g.Kind+" "+g.Key()) {
			out.Guardrails = append(out.Guardrails, g)
		}
	}
	return out
}

// setKey is a hash of everything compiling src reads: the objects as the guard reads them
// and each credential's hash. ok is false when src cannot be encoded (then nothing is
// remembered).
func setKey(src policy.Sources) (key [32]byte, ok bool) {
	tokens := make(map[string][32]byte, len(src.Tokens))
	for k, v := range src.Tokens {
		tokens[k] = sha256.Sum256([]byte(v))
	}
	raw, err := json.Marshal(struct {
		C []policy.ClassifierObject
		G []policy.GuardrailObject
		T map[string][32]byte
	}{src.Classifiers, src.Guardrails, tokens})
	if err != nil {
		return key, false
	}
	return sha256.Sum256(raw), true
}
