package policy

import (
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
)

// compileBuiltin expands packs into detectors, validates the detector configuration by
// building it, and takes the categories and the hold-back hint from it.
func compileBuiltin(out *Classifier, b *spec.BuiltinBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cfg := builtin.Config{}
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			cfg.Detectors = append(cfg.Detectors, d)
		}
	}
	packs := builtin.Packs()
	for i, pack := range b.Packs {
		ds, ok := packs[string(pack)]
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("packs").Index(i), pack, []string{"pii", "secrets", "prompt-injection"}))
			continue
		}
		for _, d := range ds {
			add(d)
		}
	}
	for _, d := range b.Detectors {
		add(string(d))
	}
	for _, pat := range b.Patterns {
		cfg.Patterns = append(cfg.Patterns, builtin.Pattern{Category: pat.Category, Regex: pat.Regex})
	}
	for _, kw := range b.Keywords {
		cfg.Keywords = append(cfg.Keywords, builtin.KeywordSet{Category: kw.Category, Words: kw.Words,
			CaseSensitive: kw.Match == spec.KeywordCaseSensitive})
	}
	if len(cfg.Detectors)+len(cfg.Patterns)+len(cfg.Keywords) == 0 {
		return append(errs, field.Required(p, "builtin needs at least one of packs, detectors, patterns or keywords"))
	}
	det, err := builtin.New(cfg)
	if err != nil {
		return append(errs, builtinErrors(err, p)...)
	}
	for _, id := range det.Categories() {
		out.Categories = append(out.Categories, Category{ID: id})
	}
	out.Builtin = &BuiltinConfig{Detectors: cfg.Detectors}
	for _, pat := range cfg.Patterns {
		out.Builtin.Patterns = append(out.Builtin.Patterns, Pattern(pat))
	}
	for _, kw := range cfg.Keywords {
		out.Builtin.Keywords = append(out.Builtin.Keywords, KeywordSet(kw))
	}
	out.Spans = true
	out.HoldBackHint = det.HoldBackHint()
	return errs
}

// builtinErrors turns the errors of builtin.New into field errors. builtin names the item
// of its config that is wrong (patterns[i].regex, keywords[i].words[j]); patterns and
// keywords are indexed as in spec.builtin, so the name continues the field path. Detectors
// are not (packs are expanded first), so their errors stay on spec.builtin.
func builtinErrors(err error, p *field.Path) field.ErrorList {
	list := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		list = joined.Unwrap()
	}
	var errs field.ErrorList
	for _, e := range list {
		item, detail, found := strings.Cut(e.Error(), ": ")
		if found && (strings.HasPrefix(item, "patterns[") || strings.HasPrefix(item, "keywords[")) {
			errs = append(errs, field.Invalid(p.Child(item), field.OmitValueType{}, detail))
			continue
		}
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, e.Error()))
	}
	return errs
}
