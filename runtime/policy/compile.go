package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/validation"
)

// Sources are the API objects a snapshot is compiled from.
type Sources struct {
	Classifiers []ClassifierObject
	Guardrails  []GuardrailObject
	// Tokens maps a classifier key (namespace/name) to its resolved credential.
	Tokens map[string]string
}

// Error is a compile error of one object. Its field errors name the offending fields.
type Error struct {
	// Kind and Key (namespace/name) of the object.
	Kind, Key string
	// Reason is spec.ReasonInvalidSpec when the object is wrong on its own, or
	// spec.ReasonClassifierMismatch when a Guardrail does not fit its Classifier.
	Reason string
	Errs   field.ErrorList
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Kind, e.Key, e.Errs.ToAggregate().Error())
}

// Message is the error without the object's name, for a condition message.
func (e *Error) Message() string { return e.Errs.ToAggregate().Error() }

// Errors is the list of compile errors of a snapshot.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Key returns namespace/name.
func Key(namespace, name string) string { return namespace + "/" + name }

// Compile compiles every Classifier and Guardrail of src into one snapshot. Any error
// fails the whole compilation (the caller keeps its last good snapshot); the returned
// error is Errors, one entry per broken object.
func Compile(src Sources) (*Snapshot, error) {
	errs := scopeErrors(src)
	snap := &Snapshot{}
	byKey := map[string]*Classifier{}
	for i := range src.Classifiers {
		c := &src.Classifiers[i]
		key := Key(c.Namespace, c.Name)
		if byKey[key] != nil {
			errs = append(errs, &Error{Kind: "Classifier", Key: key, Reason: spec.ReasonInvalidSpec,
				Errs: field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"), c.Name)}})
			continue
		}
		cc, err := CompileClassifier(c, src.Tokens[key])
		if err != nil {
			errs = append(errs, err.(*Error))
			continue
		}
		if ref := c.Spec.CredentialsSecretRef; ref != nil && cc.Token == "" {
			errs = append(errs, &Error{Kind: "Classifier", Key: key, Reason: spec.ReasonSecretNotFound,
				Errs: field.ErrorList{field.Required(field.NewPath("spec", "credentialsSecretRef"),
					fmt.Sprintf("credentials from Secret %s, key %s, are not resolved", ref.Name, ref.Key))}})
			continue
		}
		byKey[key] = cc
		snap.Classifiers = append(snap.Classifiers, cc)
	}
	seen := map[string]bool{}
	for i := range src.Guardrails {
		g := &src.Guardrails[i]
		key := Key(g.Namespace, g.Name)
		if seen[key] {
			errs = append(errs, &Error{Kind: "Guardrail", Key: key, Reason: spec.ReasonInvalidSpec,
				Errs: field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"), g.Name)}})
			continue
		}
		seen[key] = true
		ref := Key(g.Namespace, g.Spec.ClassifierRef.Name)
		c := byKey[ref]
		if c == nil {
			errs = append(errs, &Error{Kind: "Guardrail", Key: key, Reason: spec.ReasonClassifierNotFound,
				Errs: field.ErrorList{field.NotFound(field.NewPath("spec", "classifierRef", "name"), g.Spec.ClassifierRef.Name)}})
			continue
		}
		cg, err := CompileGuardrail(g, c)
		if err != nil {
			errs = append(errs, err.(*Error))
			continue
		}
		snap.Guardrails = append(snap.Guardrails, cg)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	sort.Slice(snap.Classifiers, func(i, j int) bool { return snap.Classifiers[i].Key < snap.Classifiers[j].Key })
	sort.Slice(snap.Guardrails, func(i, j int) bool { return snap.Guardrails[i].Key < snap.Guardrails[j].Key })
	snap.Version = version(snap)
	return snap, nil
}

// version hashes the snapshot's content, so that equal policies have equal versions.
func version(s *Snapshot) string {
	b, err := json.Marshal(struct {
		C []*Classifier
		G []*Guardrail
	}{s.Classifiers, s.Guardrails})
	if err != nil {
		// Every field of a snapshot marshals; this is a programming error.
		panic(fmt.Sprintf("policy: marshal snapshot: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// CompileClassifier compiles one Classifier; token is its resolved credential (empty when
// it has none or it is not resolved yet: Compile, not CompileClassifier, requires it, so
// that a Guardrail can be checked against a Classifier without reading its Secret).
// The returned error is an *Error.
func CompileClassifier(c *ClassifierObject, token string) (*Classifier, error) {
	sp := field.NewPath("spec")
	s := &c.Spec
	out := &Classifier{
		Key: Key(c.Namespace, c.Name), Namespace: c.Namespace, Name: c.Name, Generation: c.Generation,
		Token: Secret(token),
	}
	var errs field.ErrorList

	backends := 0
	for _, set := range []bool{s.Builtin != nil, s.Moderation != nil, s.LLM != nil, s.Webhook != nil} {
		if set {
			backends++
		}
	}
	if backends != 1 {
		errs = append(errs, field.Invalid(sp, fmt.Sprintf("%d backends", backends),
			"exactly one backend must be set: builtin, moderation, llm or webhook"))
		return nil, &Error{Kind: "Classifier", Key: out.Key, Reason: spec.ReasonInvalidSpec, Errs: errs}
	}

	errs = append(errs, compileCategories(out, s.Categories, sp.Child("categories"))...)
	errs = append(errs, compileQuestions(out, s.Questions, sp.Child("questions"))...)

	switch {
	case s.Builtin != nil:
		out.Backend = BackendBuiltin
		if len(s.Categories) > 0 || len(s.Questions) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("categories"),
				"a builtin classifier derives its categories from spec.builtin: remove spec.categories and spec.questions"))
		}
		if s.CredentialsSecretRef != nil {
			errs = append(errs, field.Forbidden(sp.Child("credentialsSecretRef"), "the builtin backend takes no credentials"))
		}
		errs = append(errs, compileBuiltin(out, s.Builtin, sp.Child("builtin"))...)
	case s.Moderation != nil:
		out.Backend = BackendModeration
		p := sp.Child("moderation")
		errs = append(errs, checkURL(s.Moderation.URL, p.Child("url"))...)
		if len(s.Categories) == 0 || len(s.Questions) > 0 {
			errs = append(errs, field.Required(sp.Child("categories"),
				"a moderation classifier needs spec.categories and takes no spec.questions"))
		}
		m := &ModerationConfig{URL: s.Moderation.URL, Model: s.Moderation.Model}
		rename := map[string]string{} // category id -> endpoint name
		for i, cm := range s.Moderation.CategoryMap {
			mp := p.Child("categoryMap").Index(i)
			if out.CategoryIndex(cm.Category) < 0 {
				errs = append(errs, field.NotFound(mp.Child("category"), cm.Category))
				continue
			}
			if prev, dup := rename[cm.Category]; dup {
				errs = append(errs, field.Duplicate(mp.Child("category"),
					fmt.Sprintf("%s is also mapped from %s", cm.Category, prev)))
				continue
			}
			rename[cm.Category] = cm.Name
		}
		for _, cat := range out.Categories {
			name := cat.ID
			if from, ok := rename[cat.ID]; ok {
				name = from
			}
			m.CategoryNames = append(m.CategoryNames, name)
		}
		out.Moderation = m
	case s.LLM != nil:
		out.Backend = BackendLLM
		p := sp.Child("llm")
		errs = append(errs, checkURL(s.LLM.URL, p.Child("url"))...)
		if s.LLM.Model == "" {
			errs = append(errs, field.Required(p.Child("model"), ""))
		}
		switch JudgeFormat(s.LLM.Format) {
		case JudgeScores:
			if (len(s.Categories) > 0) == (len(s.Questions) > 0) {
				errs = append(errs, field.Required(sp.Child("categories"),
					"format scores needs exactly one of spec.categories or spec.questions"))
			}
		case JudgeLlamaGuard:
			if len(s.Categories) == 0 || len(s.Questions) > 0 {
				errs = append(errs, field.Required(sp.Child("categories"),
					"format llamaGuard needs spec.categories (numbered S1, S2, ...) and takes no spec.questions"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("format"), s.LLM.Format, []string{string(JudgeScores), string(JudgeLlamaGuard)}))
		}
		out.LLM = &LLMConfig{URL: s.LLM.URL, Model: s.LLM.Model, Format: JudgeFormat(s.LLM.Format), Instructions: s.LLM.Instructions}
	case s.Webhook != nil:
		out.Backend = BackendWebhook
		errs = append(errs, checkURL(s.Webhook.URL, sp.Child("webhook", "url"))...)
		if (len(s.Categories) > 0) == (len(s.Questions) > 0) {
			errs = append(errs, field.Required(sp.Child("categories"),
				"a webhook classifier needs exactly one of spec.categories or spec.questions"))
		}
		out.Webhook = &WebhookConfig{URL: s.Webhook.URL, CABundle: slices.Clone(s.Webhook.CABundle)}
	}

	if s.Timeout != nil {
		if s.Timeout.Duration < 0 {
			errs = append(errs, field.Invalid(sp.Child("timeout"), s.Timeout.String(), "must not be negative"))
		}
		out.Timeout = s.Timeout.Duration
	}
	out.Retries = int(deref(s.Retries))
	if out.Retries < 0 || out.Retries > 3 {
		errs = append(errs, field.Invalid(sp.Child("retries"), out.Retries, "must be between 0 and 3"))
	}
	out.MaxInputChars = int(deref(s.MaxInputChars))
	out.MaxConcurrency = int(deref(s.MaxConcurrency))
	var ms field.ErrorList
	out.Modalities, ms = compileModalities(s.Modalities, sp.Child("modalities"))
	errs = append(errs, ms...)
	if out.Backend == BackendBuiltin && out.Modalities != classify.ModalitySet(0).With(classify.Text) {
		errs = append(errs, field.Invalid(sp.Child("modalities"), s.Modalities, "the builtin backend inspects text only"))
	}
	if s.Cache != nil {
		if s.Cache.TTL.Duration <= 0 || s.Cache.MaxEntries < 1 {
			errs = append(errs, field.Invalid(sp.Child("cache"), "", "cache needs a positive ttl and maxEntries"))
		}
		out.Cache = &Cache{TTL: s.Cache.TTL.Duration, MaxEntries: int(s.Cache.MaxEntries)}
	}

	if len(errs) > 0 {
		return nil, &Error{Kind: "Classifier", Key: out.Key, Reason: spec.ReasonInvalidSpec, Errs: errs}
	}
	return out, nil
}

func compileCategories(out *Classifier, cats []spec.Category, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cats {
		if msgs := validation.IsDNS1123Label(c.ID); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Index(i).Child("id"), c.ID, strings.Join(msgs, "; ")))
			continue
		}
		if out.CategoryIndex(c.ID) >= 0 {
			errs = append(errs, field.Duplicate(p.Index(i).Child("id"), c.ID))
			continue
		}
		out.Categories = append(out.Categories, c)
	}
	return errs
}

func compileQuestions(out *Classifier, qs []spec.Question, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, q := range qs {
		qp := p.Index(i)
		if !isIdentifier(q.ID) {
			errs = append(errs, field.Invalid(qp.Child("id"), q.ID, "must be a letter followed by letters, digits or underscores"))
			continue
		}
		if out.QuestionIndex(q.ID) >= 0 {
			errs = append(errs, field.Duplicate(qp.Child("id"), q.ID))
			continue
		}
		cq := Question{ID: q.ID, Type: q.Type, Instructions: q.Instructions}
		values := map[string]bool{}
		for _, c := range q.Criteria {
			values[c.Value] = true
			cq.Criteria = append(cq.Criteria, c)
		}
		switch cq.Type {
		case QuestionBoolean:
			if len(q.Criteria) != 2 || !values["true"] || !values["false"] {
				errs = append(errs, field.Invalid(qp.Child("criteria"), len(q.Criteria), "a boolean question has exactly two criteria, with values true and false"))
			}
		case QuestionChoice, QuestionScore:
			if len(values) < 2 || len(values) != len(q.Criteria) {
				errs = append(errs, field.Invalid(qp.Child("criteria"), len(q.Criteria), "choice and score questions need at least two criteria with distinct values"))
			}
		default:
			errs = append(errs, field.NotSupported(qp.Child("type"), q.Type, []string{"boolean", "choice", "score"}))
		}
		out.Questions = append(out.Questions, cq)
	}
	return errs
}

func compileModalities(ms []spec.Modality, p *field.Path) (classify.ModalitySet, field.ErrorList) {
	if len(ms) == 0 {
		return classify.ModalitySet(0).With(classify.Text), nil
	}
	var set classify.ModalitySet
	var errs field.ErrorList
	for i, m := range ms {
		switch m {
		case spec.ModalityText:
			set = set.With(classify.Text)
		case spec.ModalityImage:
			set = set.With(classify.Image)
		case spec.ModalityAudio:
			set = set.With(classify.Audio)
		case spec.ModalityFile:
			set = set.With(classify.File)
		default:
			errs = append(errs, field.NotSupported(p.Index(i), m, []string{"text", "image", "audio", "file"}))
		}
	}
	return set, errs
}

func checkURL(raw string, p *field.Path) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return field.ErrorList{field.Invalid(p, raw, "must be an absolute http or https URL")}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_'):
		default:
			return false
		}
	}
	return true
}

// deref returns *p, or 0 when p is nil (an unset optional integer).
func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// validScore reports whether v is a usable threshold.
func validScore(v float64) bool { return !math.IsNaN(v) && v >= 0 && v <= 1 }

// checkSelector validates a label selector with the rules of the apiserver's own
// validation (runtime/policy/labels), which names the offending field
// (spec.selector.matchExpressions[0].values) and value.
func checkSelector(sel *spec.LabelSelector, p *field.Path) field.ErrorList {
	if sel == nil {
		return nil
	}
	if errs := labels.Validate(sel, p); len(errs) > 0 {
		return errs
	}
	if _, err := labels.SelectorFrom(sel); err != nil {
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, err.Error())}
	}
	return nil
}
