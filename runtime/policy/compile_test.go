package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Fixtures built with functional options.

func classifierObj(name string, opts ...func(*ClassifierObject)) ClassifierObject {
	c := ClassifierObject{
		ObjectMeta: ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:       spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{Packs: []spec.BuiltinPack{spec.PackPII}}},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func judge(cats []string, questions ...spec.Question) func(*ClassifierObject) {
	return func(c *ClassifierObject) {
		c.Spec.Builtin = nil
		c.Spec.Webhook = &spec.WebhookBackend{URL: "https://judge.example.com/v1"}
		for _, id := range cats {
			c.Spec.Categories = append(c.Spec.Categories, spec.Category{ID: id, Description: "about " + id})
		}
		c.Spec.Questions = questions
	}
}

func question(id string, t spec.QuestionType, values ...string) spec.Question {
	q := spec.Question{ID: id, Type: t}
	for _, v := range values {
		q.Criteria = append(q.Criteria, spec.Criterion{Value: v, Description: v})
	}
	return q
}

func guardrailObj(name, classifier string, opts ...func(*GuardrailObject)) GuardrailObject {
	t := spec.Score(0.8)
	g := GuardrailObject{
		ObjectMeta: ObjectMeta{Namespace: "ns", Name: name, Generation: 3},
		Spec: spec.GuardrailSpec{
			Mode: spec.ModeEnforce, ClassifierRef: spec.LocalObjectReference{Name: classifier},
			Threshold: &t, Action: spec.ActionBlock, Reason: "Refused by policy",
		},
	}
	for _, o := range opts {
		o(&g)
	}
	return g
}

func rule(name, expr string, action spec.RuleAction) func(*GuardrailObject) {
	return func(g *GuardrailObject) {
		g.Spec.Threshold, g.Spec.Action = nil, ""
		g.Spec.Rules = append(g.Spec.Rules, spec.Rule{Name: name, Expression: expr, Action: action})
	}
}

func mustClassifier(t *testing.T, c ClassifierObject) *Classifier {
	t.Helper()
	cc, err := CompileClassifier(&c, "")
	if err != nil {
		t.Fatalf("CompileClassifier: %v", err)
	}
	return cc
}

func TestCompileClassifier(t *testing.T) {
	t.Run("a builtin classifier expands its packs into categories and reports spans and a hint", func(t *testing.T) {
		c := mustClassifier(t, classifierObj("pii", func(c *ClassifierObject) {
			c.Spec.Builtin.Detectors = []spec.Detector{"jwt", "email"}
			c.Spec.Builtin.Patterns = []spec.PatternRule{{Category: "employee-id", Regex: `EMP-[0-9]{6}`}}
		}))
		ids := categoryList(c)
		if !strings.HasPrefix(ids, "email, phone, credit-card") || !strings.HasSuffix(ids, "jwt, employee-id") {
			t.Errorf("categories = %s", ids)
		}
		if !c.Spans || c.HoldBackHint < 10 || c.Backend != BackendBuiltin {
			t.Errorf("spans=%v hint=%d backend=%s", c.Spans, c.HoldBackHint, c.Backend)
		}
	})
	t.Run("an invalid custom pattern names the pattern", func(t *testing.T) {
		c := classifierObj("bad", func(c *ClassifierObject) {
			c.Spec.Builtin.Patterns = []spec.PatternRule{{Category: "x", Regex: `(`}}
		})
		_, err := CompileClassifier(&c, "")
		if err == nil || !strings.Contains(err.Error(), "spec.builtin") || !strings.Contains(err.Error(), "patterns[0]") {
			t.Fatalf("err = %v, want one naming spec.builtin ... patterns[0]", err)
		}
	})
	t.Run("a moderation categoryMap resolves endpoint names in category order", func(t *testing.T) {
		c := mustClassifier(t, classifierObj("mod", func(c *ClassifierObject) {
			c.Spec.Builtin = nil
			c.Spec.Moderation = &spec.ModerationBackend{URL: "https://api.example.com/v1/moderations",
				CategoryMap: []spec.CategoryMapping{{Name: "self-harm/intent", Category: "self-harm-intent"}}}
			c.Spec.Categories = []spec.Category{{ID: "violence"}, {ID: "self-harm-intent"}}
		}))
		if got := strings.Join(c.Moderation.CategoryNames, ","); got != "violence,self-harm/intent" {
			t.Errorf("CategoryNames = %s", got)
		}
	})
	t.Run("a categoryMap entry pointing at no category is an error naming the entry", func(t *testing.T) {
		c := classifierObj("mod", func(c *ClassifierObject) {
			c.Spec.Builtin = nil
			c.Spec.Moderation = &spec.ModerationBackend{URL: "https://api.example.com/v1/moderations",
				CategoryMap: []spec.CategoryMapping{{Name: "hate", Category: "hatred"}}}
			c.Spec.Categories = []spec.Category{{ID: "violence"}}
		})
		_, err := CompileClassifier(&c, "")
		if err == nil || !strings.Contains(err.Error(), "spec.moderation.categoryMap[0].category") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a builtin with one detector and one pattern, or one keyword set, compiles", func(t *testing.T) {
		for name, b := range map[string]*spec.BuiltinBackend{
			"pattern": {Detectors: []spec.Detector{"email"}, Patterns: []spec.PatternRule{{Category: "employee-id", Regex: `EMP-[0-9]{6}`}}},
			"keyword": {Detectors: []spec.Detector{"email"}, Keywords: []spec.KeywordRule{{Category: "codenames", Words: []string{"bluebird"}}}},
		} {
			c := classifierObj("c", func(c *ClassifierObject) { c.Spec.Builtin = b })
			if _, err := CompileClassifier(&c, ""); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	t.Run("a keyword set's match mode is kept: CaseSensitive or not", func(t *testing.T) {
		c := mustClassifier(t, classifierObj("kw", func(c *ClassifierObject) {
			c.Spec.Builtin = &spec.BuiltinBackend{Keywords: []spec.KeywordRule{
				{Category: "exact", Words: []string{"Bluebird"}, Match: spec.KeywordCaseSensitive},
				{Category: "loose", Words: []string{"robin"}},
			}}
		}))
		assertEq(t, len(c.Builtin.Keywords), 2)
		assertEq(t, c.Builtin.Keywords[0].CaseSensitive, true)
		assertEq(t, c.Builtin.Keywords[1].CaseSensitive, false)
	})
	t.Run("a categoryMap entry may rename the first category", func(t *testing.T) {
		c := mustClassifier(t, classifierObj("mod", func(c *ClassifierObject) {
			c.Spec.Builtin = nil
			c.Spec.Moderation = &spec.ModerationBackend{URL: "https://api.example.com/v1/moderations",
				CategoryMap: []spec.CategoryMapping{{Name: "violence/graphic", Category: "violence"}}}
			c.Spec.Categories = []spec.Category{{ID: "violence"}, {ID: "hate"}}
		}))
		if got := strings.Join(c.Moderation.CategoryNames, ","); got != "violence/graphic,hate" {
			t.Errorf("CategoryNames = %s", got)
		}
	})
	for _, tc := range []struct {
		retries int32
		ok      bool
	}{{-1, false}, {0, true}, {3, true}, {4, false}} {
		t.Run(fmt.Sprintf("retries %d is accepted: %v (0 to 3)", tc.retries, tc.ok), func(t *testing.T) {
			c := classifierObj("judge", judge([]string{"violence"}), func(c *ClassifierObject) { c.Spec.Retries = ptr(tc.retries) })
			cc, err := CompileClassifier(&c, "")
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want accepted %v", err, tc.ok)
			}
			if tc.ok {
				assertEq(t, cc.Retries, int(tc.retries))
			} else if !strings.Contains(err.Error(), "spec.retries") {
				t.Errorf("err = %v, want one naming spec.retries", err)
			}
		})
	}
	t.Run("a repeated category or question id is a duplicate, the first one too", func(t *testing.T) {
		for name, c := range map[string]ClassifierObject{
			"spec.categories[1].id": classifierObj("dup", judge([]string{"violence", "violence"})),
			"spec.questions[1].id": classifierObj("dup", judge(nil, question("topic", spec.QuestionChoice, "a", "b"),
				question("topic", spec.QuestionChoice, "a", "b"))),
		} {
			_, err := CompileClassifier(&c, "")
			if err == nil || !strings.Contains(err.Error(), name+": Duplicate value") {
				t.Errorf("err = %v, want a duplicate %s", err, name)
			}
		}
	})
	t.Run("only the builtin backend is limited to text", func(t *testing.T) {
		media := []spec.Modality{spec.ModalityText, spec.ModalityImage}
		remote := classifierObj("remote", judge([]string{"violence"}), func(c *ClassifierObject) { c.Spec.Modalities = media })
		if _, err := CompileClassifier(&remote, ""); err != nil {
			t.Errorf("a webhook classifier with images: %v", err)
		}
		local := classifierObj("local", func(c *ClassifierObject) { c.Spec.Modalities = media })
		if _, err := CompileClassifier(&local, ""); err == nil || !strings.Contains(err.Error(), "spec.modalities") {
			t.Errorf("a builtin classifier with images: err = %v, want one naming spec.modalities", err)
		}
	})
	for _, tc := range []struct {
		url string
		ok  bool
	}{{"http://judge.svc:8080/v1", true}, {"https://judge.example.com/v1", true}, {"ftp://judge.example.com/v1", false}, {"/v1/judge", false}} {
		t.Run(fmt.Sprintf("a webhook URL %s is accepted: %v (absolute http or https)", tc.url, tc.ok), func(t *testing.T) {
			c := classifierObj("judge", judge([]string{"violence"}), func(c *ClassifierObject) { c.Spec.Webhook.URL = tc.url })
			_, err := CompileClassifier(&c, "")
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want accepted %v", err, tc.ok)
			}
			if !tc.ok && !strings.Contains(err.Error(), "spec.webhook.url") {
				t.Errorf("err = %v, want one naming spec.webhook.url", err)
			}
		})
	}
	t.Run("a classifier with two backends is rejected even without the apiserver", func(t *testing.T) {
		c := classifierObj("two", judge([]string{"x"}))
		c.Spec.Builtin = &spec.BuiltinBackend{Packs: []spec.BuiltinPack{"pii"}}
		if _, err := CompileClassifier(&c, ""); err == nil || !strings.Contains(err.Error(), "exactly one backend") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestCompileGuardrail(t *testing.T) {
	pii := mustClassifier(t, classifierObj("pii"))
	topic := mustClassifier(t, classifierObj("topic", judge(nil, question("topic", spec.QuestionChoice, "billing", "other"))))
	scored := mustClassifier(t, classifierObj("scored", judge([]string{"violence", "hate", "self-harm"})))

	tests := []struct {
		name       string
		g          GuardrailObject
		c          *Classifier
		wantReason string // empty: compiles
		wantText   string
		check      func(t *testing.T, g *Guardrail)
	}{
		{
			name: "thresholds override the threshold per category, in the classifier's order",
			g: guardrailObj("g", "scored", func(g *GuardrailObject) {
				g.Spec.Thresholds = []spec.CategoryThreshold{{Category: "self-harm", Threshold: 0.5}, {Category: "violence", Threshold: 0.9}}
			}),
			c: scored,
			check: func(t *testing.T, g *Guardrail) {
				got := fmt.Sprint(g.Categories)
				if want := "[{0 violence 0.9} {1 hate 0.8} {2 self-harm 0.5}]"; got != want {
					t.Errorf("categories = %s, want %s", got, want)
				}
			},
		},
		{
			name: "a category subset keeps only the listed categories",
			g:    guardrailObj("g", "scored", func(g *GuardrailObject) { g.Spec.Categories = []string{"hate"} }),
			c:    scored,
			check: func(t *testing.T, g *Guardrail) {
				if len(g.Categories) != 1 || g.Categories[0].Index != 1 {
					t.Errorf("categories = %v", g.Categories)
				}
			},
		},
		{
			name: "a category subset may list the classifier's first category",
			g:    guardrailObj("g", "scored", func(g *GuardrailObject) { g.Spec.Categories = []string{"violence"} }),
			c:    scored,
			check: func(t *testing.T, g *Guardrail) {
				if len(g.Categories) != 1 || g.Categories[0].ID != "violence" {
					t.Errorf("categories = %v", g.Categories)
				}
			},
		},
		{
			name:  "a CEL rule may read the classifier's first category by index",
			g:     guardrailObj("g", "scored", rule("r", "scores['violence'] > 0.5", "Block")),
			c:     scored,
			check: func(t *testing.T, g *Guardrail) { assertEq(t, len(g.Rules), 1) },
		},
		{
			name: "defaults are phases Input and Output, text, fail closed, last message, refusals match",
			g:    guardrailObj("g", "pii"),
			c:    pii,
			check: func(t *testing.T, g *Guardrail) {
				if !g.Phases.Has(PhaseInput) || !g.Phases.Has(PhaseOutput) || g.Phases.Has(PhaseStream) {
					t.Errorf("phases = %b", g.Phases)
				}
				if !g.Modalities.Has(classify.Text) || g.Modalities.Has(classify.Image) || g.FailOpen || g.AllMessages || !g.RefusalMatches {
					t.Errorf("defaults wrong: %+v", g)
				}
			},
		},
		{
			name: "an unset holdBackChars follows a built-in classifier's pending matches",
			g: guardrailObj("g", "pii", func(g *GuardrailObject) {
				g.Spec.Phases = []spec.Phase{"Stream"}
				g.Spec.Streaming = &spec.StreamingSpec{}
			}),
			c:     pii,
			check: func(t *testing.T, g *Guardrail) { assertEq(t, g.Streaming.HoldBack, HoldBackPending) },
		},
		{
			name: "an unset holdBackChars is 0 with a remote classifier: a cadence of text may pass unjudged",
			g: guardrailObj("g", "scored", func(g *GuardrailObject) {
				g.Spec.Phases = []spec.Phase{"Stream"}
				g.Spec.Streaming = &spec.StreamingSpec{EvaluateEveryChars: ptr(int32(200))}
			}),
			c:     scored,
			check: func(t *testing.T, g *Guardrail) { assertEq(t, g.Streaming.HoldBack, 0) },
		},
		{
			name: "holdBackChars Unbounded compiles to HoldBackUnbounded",
			g: guardrailObj("g", "pii", func(g *GuardrailObject) {
				g.Spec.Phases = []spec.Phase{"Stream"}
				hb := spec.FromString("Unbounded")
				g.Spec.Streaming = &spec.StreamingSpec{HoldBackChars: &hb}
			}),
			c:     pii,
			check: func(t *testing.T, g *Guardrail) { assertEq(t, g.Streaming.HoldBack, HoldBackUnbounded) },
		},
		{
			name: "an integer holdBackChars is taken as is, even 0",
			g: guardrailObj("g", "pii", func(g *GuardrailObject) {
				g.Spec.Phases = []spec.Phase{"Stream"}
				hb := spec.FromInt32(0)
				g.Spec.Streaming = &spec.StreamingSpec{HoldBackChars: &hb, EvaluateEveryChars: ptr(int32(100))}
			}),
			c: pii,
			check: func(t *testing.T, g *Guardrail) {
				assertEq(t, g.Streaming.HoldBack, 0)
				assertEq(t, g.Streaming.EvaluateEveryChars, 100)
			},
		},
		{
			name:       "Redact with a classifier that returns no spans does not fit the classifier",
			g:          guardrailObj("g", "scored", func(g *GuardrailObject) { g.Spec.Action = spec.ActionRedact }),
			c:          scored,
			wantReason: spec.ReasonClassifierMismatch, wantText: "spec.action",
		},
		{
			name:       "a category the classifier does not have is named with the classifier's categories",
			g:          guardrailObj("g", "pii", func(g *GuardrailObject) { g.Spec.Categories = []string{"aws-access-key"} }),
			c:          pii,
			wantReason: spec.ReasonClassifierMismatch, wantText: "spec.categories[0]: Not found: \"aws-access-key (classifier pii has email",
		},
		{
			name:       "category rules against a classifier with only questions do not fit",
			g:          guardrailObj("g", "topic"),
			c:          topic,
			wantReason: spec.ReasonClassifierMismatch, wantText: "has questions, not categories",
		},
		{
			name:       "a CEL rule that does not parse is an invalid spec naming the rule",
			g:          guardrailObj("g", "topic", rule("off-topic", "answers.topic.choice ==", "Block")),
			c:          topic,
			wantReason: spec.ReasonInvalidSpec, wantText: "spec.rules[off-topic].expression",
		},
		{
			name:       "a CEL rule reading a field answers do not have fails type-checking",
			g:          guardrailObj("g", "topic", rule("typo", "answers.topic.chioce == 'other'", "Block")),
			c:          topic,
			wantReason: spec.ReasonInvalidSpec, wantText: "chioce",
		},
		{
			name:       "a CEL rule that is not a bool is an invalid spec",
			g:          guardrailObj("g", "topic", rule("score", "answers.topic.score", "Block")),
			c:          topic,
			wantReason: spec.ReasonInvalidSpec, wantText: "must evaluate to a bool",
		},
		{
			name:       "a CEL rule reading an unknown question does not fit the classifier",
			g:          guardrailObj("g", "topic", rule("r", "answers.unsafe.probability > 0.8", "Block")),
			c:          topic,
			wantReason: spec.ReasonClassifierMismatch, wantText: `classifier topic has no question "unsafe"`,
		},
		{
			name:       "a CEL rule reading an unknown score by index does not fit the classifier",
			g:          guardrailObj("g", "scored", rule("r", "scores['violenc'] > 0.5", "Block")),
			c:          scored,
			wantReason: spec.ReasonClassifierMismatch, wantText: `has no category "violenc"`,
		},
		{
			name: "a rule without a reason takes the guardrail's",
			g:    guardrailObj("g", "topic", rule("off-topic", "answers.topic.choice == 'other'", "Strip")),
			c:    topic,
			check: func(t *testing.T, g *Guardrail) {
				assertEq(t, g.Rules[0].Reason, "Refused by policy")
				assertEq(t, g.Rules[0].Action, ActionStrip)
				assertEq(t, g.Sanitizer(), true)
			},
		},
		{
			name: "streaming without the Stream phase is invalid even without the apiserver",
			g: guardrailObj("g", "pii", func(g *GuardrailObject) {
				g.Spec.Streaming = &spec.StreamingSpec{}
			}),
			c:          pii,
			wantReason: spec.ReasonInvalidSpec, wantText: "spec.streaming",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CompileGuardrail(&tt.g, tt.c)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("CompileGuardrail: %v", err)
				}
				tt.check(t, got)
				return
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if perr.Reason != tt.wantReason || !strings.Contains(perr.Message(), tt.wantText) {
				t.Fatalf("err = %s: %s, want %s containing %q", perr.Reason, perr.Message(), tt.wantReason, tt.wantText)
			}
		})
	}
}

func TestCompile(t *testing.T) {
	src := Sources{
		Classifiers: []ClassifierObject{
			classifierObj("pii"),
			classifierObj("judge", judge([]string{"violence"}), func(c *ClassifierObject) {
				c.Spec.CredentialsSecretRef = &spec.SecretKeyReference{Name: "judge", Key: "apiKey"}
			}),
		},
		Guardrails: []GuardrailObject{guardrailObj("b", "judge"), guardrailObj("a", "pii")},
		Tokens:     map[string]string{"ns/judge": "tok-123"},
	}
	t.Run("a snapshot is sorted and versioned by content", func(t *testing.T) {
		s1, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		assertEq(t, s1.Guardrails[0].Key, "ns/a")
		assertEq(t, s1.Classifiers[0].Key, "ns/judge")
		assertEq(t, s1.Classifiers[1].Key, "ns/pii")
		assertEq(t, s1.Classifier("ns/judge").Token, Secret("tok-123"))
		s2, _ := Compile(src)
		assertEq(t, s1.Version, s2.Version)
		src2 := src
		src2.Guardrails = []GuardrailObject{guardrailObj("b", "judge"), guardrailObj("a", "pii", func(g *GuardrailObject) { g.Spec.Reason = "x" })}
		s3, _ := Compile(src2)
		if s3.Version == s1.Version {
			t.Error("a changed policy kept its version")
		}
	})
	t.Run("a missing classifier and unresolved credentials fail the snapshot, naming each object", func(t *testing.T) {
		bad := src
		bad.Tokens = nil
		bad.Guardrails = append(bad.Guardrails, guardrailObj("c", "nope"))
		_, err := Compile(bad)
		if err == nil {
			t.Fatal("want an error")
		}
		for _, want := range []string{"Classifier ns/judge: spec.credentialsSecretRef", "Guardrail ns/c: spec.classifierRef.name: Not found"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("a credential never prints", func(t *testing.T) {
		s, _ := Compile(src)
		c := s.Classifier("ns/judge")
		for _, out := range []string{fmt.Sprint(c.Token), fmt.Sprintf("%v %+v %#v %s %q", c.Token, c.Token, c.Token, c.Token, c.Token), fmt.Sprintf("%+v", *c)} {
			if strings.Contains(out, "tok-123") {
				t.Errorf("credential printed: %s", out)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

func assertEq[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestUnjudged(t *testing.T) {
	stream := PhaseSet(0).With(PhaseStream)
	cases := []struct {
		name string
		g    Guardrail
		want string
	}{
		{"no Stream phase", Guardrail{Phases: PhaseSet(0).With(PhaseOutput), Streaming: Streaming{EvaluateEveryChars: 100}}, ""},
		{"every delta judged", Guardrail{Phases: stream}, ""},
		{"a hold-back that covers the cadence", Guardrail{Phases: stream, Streaming: Streaming{EvaluateEveryChars: 64, HoldBack: 63}}, ""},
		{"pending matches", Guardrail{Phases: stream, Streaming: Streaming{EvaluateEveryChars: 64, HoldBack: HoldBackPending}}, ""},
		{"Unbounded", Guardrail{Phases: stream, Streaming: Streaming{EvaluateEveryChars: 64, HoldBack: HoldBackUnbounded, MaxEvaluations: 3}}, ""},
		{"a remote classifier's cadence", Guardrail{Phases: stream, Streaming: Streaming{EvaluateEveryChars: 200}},
			"up to 199 characters of a stream reach the client before they are judged (evaluateEveryChars 200, holdBackChars 0)"},
		{"a partial hold-back", Guardrail{Phases: stream, Streaming: Streaming{EvaluateEveryChars: 200, HoldBack: 50}},
			"up to 149 characters of a stream reach the client before they are judged (evaluateEveryChars 200, holdBackChars 50)"},
		{"sentences and a cap", Guardrail{Phases: stream, Streaming: Streaming{Sentences: true, HoldBack: 20, MaxEvaluations: 5}},
			"up to a sentence of text beyond the hold-back of 20 characters reaches the client before it is judged (segmentation Sentences); " +
				"after 5 evaluations the rest of a stream is released unjudged but for the terminal evaluation (maxEvaluations)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertEq(t, tc.g.Unjudged(), tc.want) })
	}
}

// Bounds are inclusive: a threshold of exactly 0 or 1 and an identifier of exactly 63
// characters are valid; one step past them is not.
func TestCompileBounds(t *testing.T) {
	scored := mustClassifier(t, classifierObj("scored", judge([]string{"violence"})))
	for _, tc := range []struct {
		threshold spec.Score
		ok        bool
	}{{-0.01, false}, {0, true}, {1, true}, {1.01, false}} {
		t.Run(fmt.Sprintf("threshold %v is accepted: %v", tc.threshold, tc.ok), func(t *testing.T) {
			g := guardrailObj("g", "scored", func(g *GuardrailObject) { g.Spec.Threshold = ptr(tc.threshold) })
			_, err := CompileGuardrail(&g, scored)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want accepted %v", err, tc.ok)
			}
		})
		t.Run(fmt.Sprintf("a per-category threshold %v is accepted: %v", tc.threshold, tc.ok), func(t *testing.T) {
			g := guardrailObj("g", "scored", func(g *GuardrailObject) {
				g.Spec.Thresholds = []spec.CategoryThreshold{{Category: "violence", Threshold: tc.threshold}}
			})
			_, err := CompileGuardrail(&g, scored)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want accepted %v", err, tc.ok)
			}
		})
	}
	for _, n := range []int{63, 64} {
		t.Run(fmt.Sprintf("a question id of %d characters is accepted: %v", n, n <= 63), func(t *testing.T) {
			c := classifierObj("judge", judge(nil, question("q"+strings.Repeat("x", n-1), spec.QuestionBoolean, "true", "false")))
			_, err := CompileClassifier(&c, "")
			if (err == nil) != (n <= 63) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestSanitizer(t *testing.T) {
	strip, err := NewRule("strip", "true", ActionStrip, "")
	if err != nil {
		t.Fatal(err)
	}
	block, err := NewRule("block", "true", ActionBlock, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		g    Guardrail
		want bool
	}{
		{"category rules that strip", Guardrail{Action: ActionStrip}, true},
		{"category rules that redact", Guardrail{Action: ActionRedact}, true},
		{"category rules that block", Guardrail{Action: ActionBlock}, false},
		{"category rules that warn", Guardrail{Action: ActionWarn}, false},
		{"a CEL rule that strips", Guardrail{Action: ActionBlock, Rules: []*Rule{block, strip}}, true},
		{"CEL rules that only block", Guardrail{Rules: []*Rule{block}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name+" rewrite content: "+fmt.Sprint(tc.want), func(t *testing.T) { assertEq(t, tc.g.Sanitizer(), tc.want) })
	}
}
