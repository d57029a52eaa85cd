package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"

	// Rules are type-checked with cel-go here; the guard cannot.
	_ "github.com/guardrail-dev/guardrail-operator/internal/rulecheck"
)

// built is one compiled snapshot, ready to send.
type built struct {
	version string
	// raw is the snapshot as sent on the wire.
	raw []byte
	// enforced is the pod annotation naming the Guardrails it holds (name=generation,…).
	enforced string
	// excluded holds the keys of the selected Guardrails left out because they do not
	// compile (their own status says why).
	excluded []string
	// src is what was compiled: the next build of the same (namespace, policy set) keeps
	// the last good form of a Guardrail that stops compiling.
	src policy.Sources
}

// builder compiles the snapshot of a (namespace, policy set).
type builder struct {
	// cache reads Guardrails, Classifiers, their cluster forms and Namespaces (metadata).
	cache client.Reader
	// secrets reads Secrets from the apiserver: the manager caches only their metadata,
	// so that credentials are not held in its memory beyond a snapshot.
	secrets client.Reader
	// allowLocal distributes Classifiers whose backend URL is local (Options).
	allowLocal bool
	// operatorNamespace holds the Secrets of ClusterClassifiers.
	operatorNamespace string
	// compiled remembers what compiled of each set of sources (compiledSets): a rebuild
	// that finds the same objects at the same generations and credentials compiles
	// nothing.
	compiled compiledSets
	// tracingHeaders names the Secret of the guards' OTLP headers (tracing.go); log says
	// when it cannot be used, tracingState what it last said.
	tracingHeaders injection.TracingHeaders
	log            logr.Logger
	tracingState   tracingHeadersState
	// tracingClientCert names the Secret of the guards' client certificate
	// (tracing_cert.go), clientCertState what was last logged of it.
	tracingClientCert injection.TracingClientCert
	clientCertState   tracingHeadersState
}

// build resolves what a pod of ns with sel gets: the Guardrails of ns whose selector
// matches the pod's labels and the ClusterGuardrails whose namespaceSelector matches ns's
// labels and whose selector matches the pod's labels (cluster.go), keyed by which they are
// and the ModelProviders of sel (policySet); compile compiles them.
func (b *builder) build(ctx context.Context, ns string, sel selection) (string, compileFunc, error) {
	guardrails, err := b.selected(ctx, ns, sel.labels)
	if err != nil {
		return "", nil, err
	}
	providers := slices.Clone(sel.providers)
	traced := b.tracedTo(sel.tracing)
	return policySet(guardrails, providers, traced), func(ctx context.Context, prev *built) (*built, error) {
		return b.compile(ctx, ns, guardrails, providers, traced, prev)
	}, nil
}

// selected returns the Guardrails and ClusterGuardrails selecting a pod of ns with
// podLabels, sorted.
func (b *builder) selected(ctx context.Context, ns string, podLabels labels.Set) ([]policy.GuardrailObject, error) {
	var list v1alpha1.GuardrailList
	if err := b.cache.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Guardrails: %w", err)
	}
	var guardrails []policy.GuardrailObject
	for i := range list.Items {
		g := &list.Items[i]
		if !g.DeletionTimestamp.IsZero() || !selects(g.Spec.Selector, podLabels) {
			continue
		}
		guardrails = append(guardrails, policykube.Guardrail(g))
	}
	cluster, err := b.clusterGuardrails(ctx, ns, podLabels)
	if err != nil {
		return nil, err
	}
	guardrails = append(guardrails, cluster...)
	sortGuardrails(guardrails)
	return guardrails, nil
}

// policySet names what a snapshot is compiled from, beside its namespace: which
// Guardrails and ClusterGuardrails select the pod, the ModelProviders its guard was
// injected for, and whether it gets the collector's credentials (traced). Label sets with
// the same policy set get the same snapshot.
func policySet(guardrails []policy.GuardrailObject, providers []string, traced bool) string {
	h := sha256.New()
	for i := range guardrails {
		h.Write([]byte(guardrails[i].Kind + " " + guardrails[i].Key() + "\n"))
	}
	h.Write([]byte("\x00" + strings.Join(providers, ",")))
	if traced {
		h.Write([]byte("\x00traced"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// compile compiles the snapshot of the selected guardrails of ns: it resolves their
// Classifiers and ClusterClassifiers and credentials, adds the ModelProviders of
// providers that select ns (providers.go), and compiles them with policy.Compile, the
// code the guard runs. An object that does not compile is left out (its status already
// says Stalled or waiting), so one broken Guardrail never withholds the others from the
// guards.
//
// A Guardrail that compiled in prev (the last snapshot of this policy set) and no longer
// does — an edit that does not fit its Classifier, a Classifier whose Secret went away —
// is kept in its last good form, with its last good Classifier: breaking a policy never
// switches it off in the guards. Its status says Stalled or waiting meanwhile.
func (b *builder) compile(ctx context.Context, ns string, guardrails []policy.GuardrailObject, providerNames []string, traced bool, prev *built) (*built, error) {
	classifiers := map[string]policy.ClassifierObject{}
	tokens := map[string]string{}
	secretVersions := map[string]string{}
	for _, g := range guardrails {
		key := policy.Key(g.Namespace, g.Spec.ClassifierRef.Name)
		if _, done := classifiers[key]; done {
			continue
		}
		c, ref, secretNS, err := b.classifier(ctx, ns, &g)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if !b.allowLocal && len(policy.LocalBackendURLs(&c.Spec)) > 0 {
			continue // Stalled: its status names the URL
		}
		if ref != nil {
			token, rv, err := b.credential(ctx, secretNS, ref)
			if err != nil {
				return nil, err
			}
			if token == "" {
				continue // not resolved: the Classifier's status says so
			}
			tokens[key], secretVersions[key] = token, rv
		}
		classifiers[key] = *c
	}

	src := policy.Sources{Guardrails: guardrails, Tokens: tokens}
	for _, c := range classifiers {
		src.Classifiers = append(src.Classifiers, c)
	}
	sortClassifiers(src.Classifiers)
	src, excluded, err := b.compiled.compilable(src)
	if err != nil {
		return nil, fmt.Errorf("compiling the snapshot of namespace %s: %w", ns, err)
	}
	if kept, ok := keepLastGood(src, excluded, prev, guardrails); ok {
		if kept, _, err := b.compiled.compilable(kept); err == nil {
			src = kept
		}
	}

	tokens = map[string]string{}
	for k, v := range src.Tokens {
		if hasClassifier(src.Classifiers, k) {
			tokens[k] = v
		}
	}
	for k := range secretVersions {
		if _, ok := tokens[k]; !ok {
			delete(secretVersions, k)
		}
	}
	src.Tokens = tokens
	providers, err := b.providers(ctx, ns, providerNames, secretVersions)
	if err != nil {
		return nil, err
	}
	var tracing *cp.Tracing
	if traced {
		if tracing, err = b.tracing(ctx, secretVersions); err != nil {
			return nil, err
		}
	}
	snap := cp.Snapshot{Namespace: ns, Classifiers: src.Classifiers, Guardrails: src.Guardrails, Credentials: tokens, Providers: providers,
		Tracing: tracing}
	if snap.Classifiers == nil {
		snap.Classifiers = []policy.ClassifierObject{}
	}
	if snap.Guardrails == nil {
		snap.Guardrails = []policy.GuardrailObject{}
	}
	snap.Version = versionOf(&snap, secretVersions)
	if prev != nil && prev.version == snap.Version {
		// Nothing of it changed (a relabel, a change elsewhere in the namespace): the
		// version covers everything a guard gets, as subscribe's comparison relies on.
		return prev, nil
	}
	raw, err := json.Marshal(&snap)
	if err != nil {
		return nil, err
	}
	return &built{version: snap.Version, raw: raw, enforced: formatEnforced(snap.Guardrails), excluded: excluded, src: src}, nil
}

// classifier reads the Classifier a Guardrail references (the ClusterClassifier of a
// ClusterGuardrail), with the reference of its credential and the namespace of that
// Secret: the Guardrail's, or the operator's for a ClusterClassifier. A classifier that
// does not exist is nil.
func (b *builder) classifier(ctx context.Context, ns string, g *policy.GuardrailObject) (*policy.ClassifierObject, *v1alpha1.SecretKeyReference, string, error) {
	name := g.Spec.ClassifierRef.Name
	if g.Kind == policy.KindClusterGuardrail {
		c := &v1alpha1.ClusterClassifier{}
		err := b.cache.Get(ctx, types.NamespacedName{Name: name}, c)
		if apierrors.IsNotFound(err) {
			return nil, nil, "", nil
		}
		if err != nil {
			return nil, nil, "", fmt.Errorf("reading ClusterClassifier %s: %w", name, err)
		}
		obj := policykube.ClusterClassifier(c)
		return &obj, c.Spec.CredentialsSecretRef, b.operatorNamespace, nil
	}
	c := &v1alpha1.Classifier{}
	err := b.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("reading Classifier %s: %w", name, err)
	}
	obj := policykube.Classifier(c)
	return &obj, c.Spec.CredentialsSecretRef, ns, nil
}

func sortGuardrails(gs []policy.GuardrailObject) {
	sort.Slice(gs, func(i, j int) bool { return gs[i].Key() < gs[j].Key() })
}

func sortClassifiers(cs []policy.ClassifierObject) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Key() < cs[j].Key() })
}

// compilable drops the objects that do not compile until the rest does.
func compilable(src policy.Sources) (policy.Sources, []string, error) {
	var excluded []string
	for range 4 {
		_, err := policy.Compile(src)
		if err == nil {
			return src, excluded, nil
		}
		var errs policy.Errors
		if !errors.As(err, &errs) {
			return src, excluded, err
		}
		src, excluded = without(src, errs, excluded)
	}
	_, err := policy.Compile(src)
	return src, excluded, err
}

// keepLastGood adds back, from prev, the last good form of each excluded Guardrail that
// is still selected, with its Classifier and credential when the current ones are gone
// or were dropped.
func keepLastGood(src policy.Sources, excluded []string, prev *built, selected []policy.GuardrailObject) (policy.Sources, bool) {
	if prev == nil || len(excluded) == 0 {
		return src, false
	}
	stillSelected := map[string]bool{}
	for i := range selected {
		stillSelected[selected[i].Key()] = true
	}
	out := policy.Sources{Classifiers: slices.Clone(src.Classifiers), Guardrails: slices.Clone(src.Guardrails), Tokens: maps.Clone(src.Tokens)}
	if out.Tokens == nil {
		out.Tokens = map[string]string{}
	}
	added := false
	for _, key := range excluded {
		i := slices.IndexFunc(prev.src.Guardrails, func(g policy.GuardrailObject) bool { return g.Key() == key })
		if i < 0 || !stillSelected[key] {
			continue
		}
		g := prev.src.Guardrails[i]
		ckey := policy.Key(g.Namespace, g.Spec.ClassifierRef.Name)
		if !hasClassifier(out.Classifiers, ckey) {
			j := slices.IndexFunc(prev.src.Classifiers, func(c policy.ClassifierObject) bool { return policy.Key(c.Namespace, c.Name) == ckey })
			if j < 0 {
				continue
			}
			out.Classifiers = append(out.Classifiers, prev.src.Classifiers[j])
			if t, ok := prev.src.Tokens[ckey]; ok {
				out.Tokens[ckey] = t
			}
		}
		out.Guardrails = append(out.Guardrails, g)
		added = true
	}
	sortClassifiers(out.Classifiers)
	sortGuardrails(out.Guardrails)
	return out, added
}

// credential reads a Classifier's credential and the resource version of its Secret.
func (b *builder) credential(ctx context.Context, ns string, ref *v1alpha1.SecretKeyReference) (string, string, error) {
	key := ref.Key
	if key == "" {
		key = "apiKey"
	}
	s := &corev1.Secret{}
	err := b.secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, s)
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	return string(s.Data[key]), string(s.UID) + "/" + s.ResourceVersion, nil
}

// without drops the objects named by errs, and the Guardrails of a dropped Classifier.
func without(src policy.Sources, errs policy.Errors, excluded []string) (policy.Sources, []string) {
	bad := map[string]bool{}
	for _, e := range errs {
		bad[e.Kind+" "+e.Key] = true
	}
	var out policy.Sources
	out.Tokens = src.Tokens
	for _, c := range src.Classifiers {
		if key := policy.Key(c.Namespace, c.Name); !bad["Classifier "+key] && !bad[policy.KindClusterClassifier+" "+key] {
			out.Classifiers = append(out.Classifiers, c)
		}
	}
	for _, g := range src.Guardrails {
		key := policy.Key(g.Namespace, g.Name)
		if bad[g.Kind+" "+key] || bad["Guardrail "+key] || !hasClassifier(out.Classifiers, policy.Key(g.Namespace, g.Spec.ClassifierRef.Name)) {
			excluded = append(excluded, key)
			continue
		}
		out.Guardrails = append(out.Guardrails, g)
	}
	return out, excluded
}

func hasClassifier(cs []policy.ClassifierObject, key string) bool {
	for i := range cs {
		if policy.Key(cs[i].Namespace, cs[i].Name) == key {
			return true
		}
	}
	return false
}

// selects reports whether a Guardrail's selector (or a ClusterGuardrail's
// namespaceSelector) matches the labels of a pod (or a namespace); an empty selector
// selects everything.
func selects(selector *v1alpha1.LabelSelector, set labels.Set) bool {
	if selector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(selector))
	if err != nil {
		return false // the schema and the reconciler refuse it; it compiles nowhere
	}
	return sel.Matches(set)
}

// versionOf hashes the snapshot without its credentials, tracing headers and client
// certificate, and the identity and resource version of each credential's Secret (and of
// the headers' and the certificate's): a rotation changes the version, and the version
// reveals nothing of a credential. Every replica computes the same version. A snapshot
// without providers or tracing hashes as it did before they existed.
func versionOf(s *cp.Snapshot, secretVersions map[string]string) string {
	providers := make([]cp.Provider, len(s.Providers))
	for i, p := range s.Providers {
		p.Credential = ""
		providers[i] = p
	}
	var tracing *cp.Tracing
	if s.Tracing != nil {
		tracing = &cp.Tracing{Endpoint: s.Tracing.Endpoint}
		if cc := s.Tracing.ClientCertificate; cc != nil {
			// Whether there is one, or the guards keep theirs; its content is covered by
			// its Secret's version.
			tracing.ClientCertificate = &cp.ClientCertificate{KeepLast: cc.KeepLast}
		}
	}
	b, err := json.Marshal(struct {
		N string
		C []policy.ClassifierObject
		G []policy.GuardrailObject
		S map[string]string
		P []cp.Provider `json:",omitempty"`
		T *cp.Tracing   `json:",omitempty"`
	}{s.Namespace, s.Classifiers, s.Guardrails, secretVersions, providers, tracing})
	if err != nil {
		panic(fmt.Sprintf("controlplane: marshal snapshot: %v", err)) // every field marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
