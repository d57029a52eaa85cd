package policyreconciler

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"

	// Rules are type-checked with cel-go here; the guard cannot.
	_ "github.com/guardrail-dev/guardrail-operator/internal/rulecheck"
)

// Compiler compiles classifiers and guardrails with the compiler the guard runs, once per
// generation: a result (a compiled policy or the compiler's error) is kept under the
// object's kind, namespace and name for as long as its UID and generation (and, for a
// guardrail, its classifier's) stay the same. A Classifier's reconciler, the reconcilers
// of the Guardrails that use it and every recount of their pods then share one
// compilation. A nil *Compiler compiles every time.
//
// Results are shared between reconciles: neither they nor the errors may be changed.
type Compiler struct {
	mu          sync.Mutex
	classifiers map[slot]classifierEntry
	guardrails  map[slot]guardrailEntry
}

// NewCompiler returns an empty Compiler, one per manager.
func NewCompiler() *Compiler {
	return &Compiler{classifiers: map[slot]classifierEntry{}, guardrails: map[slot]guardrailEntry{}}
}

// slot names an object: one entry per object, replaced when its generation changes and
// dropped when the object is gone (Forget).
type slot struct{ kind, namespace, name string }

// version is what a compilation depends on of one object.
type version struct {
	uid        types.UID
	generation int64
}

type classifierEntry struct {
	at       version
	compiled *policy.Classifier
	err      error
}

type guardrailEntry struct {
	at, classifier version
	compiled       *policy.Guardrail
	err            error
}

func slotOf(kind string, m *policy.ObjectMeta) slot { return slot{kind, m.Namespace, m.Name} }

func versionOf(m *policy.ObjectMeta) version {
	return version{types.UID(m.UID), m.Generation}
}

// Classifier is policy.CompileClassifier(c, ""): a classifier as the manager judges it,
// without its credential.
func (cc *Compiler) Classifier(c *policy.ClassifierObject) (*policy.Classifier, error) {
	if cc == nil || c.UID == "" {
		return policy.CompileClassifier(c, "")
	}
	k, at := slotOf(c.Kind, &c.ObjectMeta), versionOf(&c.ObjectMeta)
	cc.mu.Lock()
	e, ok := cc.classifiers[k]
	cc.mu.Unlock()
	if ok && e.at == at {
		return e.compiled, e.err
	}
	compiled, err := policy.CompileClassifier(c, "")
	cc.mu.Lock()
	cc.classifiers[k] = classifierEntry{at: at, compiled: compiled, err: err}
	cc.mu.Unlock()
	return compiled, err
}

// Guardrail is policy.CompileGuardrail(g, compiled): g against classifier c, which
// compiled into compiled.
func (cc *Compiler) Guardrail(g *policy.GuardrailObject, c *policy.ClassifierObject, compiled *policy.Classifier) (*policy.Guardrail, error) {
	if cc == nil || g.UID == "" || c.UID == "" {
		return policy.CompileGuardrail(g, compiled)
	}
	k, at, cat := slotOf(g.Kind, &g.ObjectMeta), versionOf(&g.ObjectMeta), versionOf(&c.ObjectMeta)
	cc.mu.Lock()
	e, ok := cc.guardrails[k]
	cc.mu.Unlock()
	if ok && e.at == at && e.classifier == cat {
		return e.compiled, e.err
	}
	out, err := policy.CompileGuardrail(g, compiled)
	cc.mu.Lock()
	cc.guardrails[k] = guardrailEntry{at: at, classifier: cat, compiled: out, err: err}
	cc.mu.Unlock()
	return out, err
}

// Forget drops what is kept of the object of kind (the compiler's: "Guardrail",
// policy.KindClusterGuardrail, ...) named by key, once it no longer exists.
func (cc *Compiler) Forget(kind string, key types.NamespacedName) {
	if cc == nil {
		return
	}
	k := slot{kind, key.Namespace, key.Name}
	cc.mu.Lock()
	delete(cc.classifiers, k)
	delete(cc.guardrails, k)
	cc.mu.Unlock()
}
