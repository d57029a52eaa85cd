package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Pattern maps a custom Go regular expression to a category.
type Pattern struct {
	// Category is the category id a match is reported under; a lowercase DNS label.
	Category string
	// Regex is a Go (RE2) regular expression. It must not match the empty string.
	Regex string
}

// KeywordSet maps a word list to a category. A word matches as a whole word: the characters
// around it are not letters, digits or underscores.
type KeywordSet struct {
	// Category is the category id a match is reported under; a lowercase DNS label.
	Category string
	// Words are the words or phrases to find; none may be blank.
	Words []string
	// CaseSensitive turns off case-insensitive matching.
	CaseSensitive bool
}

// Config is the built-in backend's configuration, as compiled from Classifier.spec.builtin.
type Config struct {
	// Detectors are detector names (see DetectorNames); packs are already expanded by the
	// caller (see Packs). A name given twice is used once.
	Detectors []string
	// Patterns are custom regular expressions.
	Patterns []Pattern
	// Keywords are custom word lists.
	Keywords []KeywordSet
}

// Classifier is the built-in classifier. It is immutable after New and safe for concurrent
// use.
type Classifier struct {
	categories []string
	// cat maps a detector to its category index, -1 when the detector is not enabled.
	cat [numDetectors]int16
	// trig marks the bytes at which the single pass stops (see scan.go).
	trig [256]uint16
	// quietLower: no small ASCII letter triggers anything (no custom pattern or keyword
	// begins with one), so the passes skip runs of them a word at a time.
	quietLower bool
	// numbers is whether a detector of numbers (phone, card, IBAN, SSN, IP) is on: without
	// one, a digit matters only to the secrets pack, after a letter (databricksAt).
	numbers bool
	// wordFirst marks the bytes that can begin a word worth looking at after a boundary.
	wordFirst [256]uint8
	// wordPairs holds the first two bytes of the words wordFirst stands for.
	wordPairs byteSet64k
	hint      int

	windowed []*pattern // custom patterns matched in a window at their trigger bytes
	global   []*pattern // custom patterns matched over the whole text (no selective trigger)
	keywords keywordIndex
}

var _ classify.Classifier = (*Classifier)(nil)

// Packs returns the named detector packs: pack name → detector names, in canonical order. The
// map is a fresh copy.
func Packs() map[string][]string {
	out := make(map[string][]string, len(packs))
	for name, dets := range packs {
		names := make([]string, len(dets))
		for i, d := range dets {
			names[i] = detectors[d].name
		}
		out[name] = names
	}
	return out
}

// DetectorNames returns every detector name, in canonical order (the pii pack, then secrets,
// then prompt-injection).
func DetectorNames() []string {
	names := make([]string, numDetectors)
	for d := range numDetectors {
		names[d] = detectors[d].name
	}
	return names
}

// New validates cfg and compiles it. Every error names the offending item, for example
// `patterns[2].regex: ...`; all problems are reported together.
func New(cfg Config) (*Classifier, error) {
	c := &Classifier{}
	for d := range c.cat {
		c.cat[d] = -1
	}
	var errs []error
	index := map[string]int{}
	category := func(id string) int16 {
		if i, ok := index[id]; ok {
			return int16(i)
		}
		index[id] = len(c.categories)
		c.categories = append(c.categories, id)
		return int16(len(c.categories) - 1)
	}

	for i, name := range cfg.Detectors {
		d, ok := detectorByName(name)
		if !ok {
			errs = append(errs, fmt.Errorf("detectors[%d]: unknown detector %q", i, name))
			continue
		}
		if c.cat[d] < 0 {
			c.cat[d] = category(name)
		}
	}
	for i, p := range cfg.Patterns {
		if err := validCategory(p.Category); err != nil {
			errs = append(errs, fmt.Errorf("patterns[%d].category: %w", i, err))
			continue
		}
		cp, err := compilePattern(p.Regex)
		if err != nil {
			errs = append(errs, fmt.Errorf("patterns[%d].regex: %w", i, err))
			continue
		}
		cp.cat = category(p.Category)
		if cp.windowed && len(c.windowed) < maxWindowed {
			cp.slot = len(c.windowed)
			c.windowed = append(c.windowed, cp)
		} else {
			c.global = append(c.global, cp)
		}
	}
	for i, k := range cfg.Keywords {
		if err := validCategory(k.Category); err != nil {
			errs = append(errs, fmt.Errorf("keywords[%d].category: %w", i, err))
			continue
		}
		if err := validWords(k.Words); err != nil {
			errs = append(errs, fmt.Errorf("keywords[%d].%w", i, err))
			continue
		}
		c.keywords.add(k, category(k.Category))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(c.categories) == 0 {
		return nil, errors.New("config: no detectors, patterns or keywords")
	}
	c.build()
	return c, nil
}

// Categories returns the category ids in authored order: detectors in the order given, then
// pattern categories, then keyword categories, each id once (first occurrence wins). Result
// scores are indexed by this order.
func (c *Classifier) Categories() []string { return slices.Clone(c.categories) }

// HoldBackHint is the longest possible match in characters over everything enabled:
// withholding that many trailing characters of a stream means no byte of a match is released
// before the match is complete. Streaming-prefix detectors (private-key, jwt) count the part
// they need before they match; unbounded custom patterns count as 256 characters. Detectors
// that decide a match by the text before it (an identifier word before a number, a key
// before a value) count that context when it is longer than their match: the engine re-sends
// HoldBackHint characters before the text it has not released yet.
func (c *Classifier) HoldBackHint() int { return c.hint }

// Classify scores every category against in.Text and returns the spans of all matches.
// Non-text parts are ignored: the engine decides which modalities reach which backend. It
// returns ctx's error when ctx ends before the text is scanned.
//
// With in.More set, the end of the text is not a boundary: Result.Open is where the pending
// text begins (see pending.go), every span ends at or before it, and the scores count only
// those settled spans. Without it, Open is 0.
func (c *Classifier) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	if err := ctx.Err(); err != nil {
		return classify.Result{}, err
	}
	spans, open, err := c.scan(ctx, in.Text, in.More)
	if err != nil {
		return classify.Result{}, err
	}
	scores := make([]float64, len(c.categories))
	for _, sp := range spans {
		scores[sp.Category] = 1
	}
	return classify.Result{Scores: scores, Spans: spans, Open: open}, nil
}

// validCategory reports whether id is a lowercase RFC 1123 label, as category ids are.
func validCategory(id string) error {
	if len(id) == 0 || len(id) > 63 {
		return fmt.Errorf("%q must be 1 to 63 characters", id)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		ok := b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' && i > 0 && i < len(id)-1
		if !ok {
			return fmt.Errorf("%q is not a lowercase DNS label", id)
		}
	}
	return nil
}
