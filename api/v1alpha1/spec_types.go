package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// The specs of this API are defined once, in package spec, which imports nothing from
// Kubernetes so that the guard sidecar can decode them without linking apimachinery. The
// names below are aliases of those types and constants (not copies: v1alpha1.Mode is
// spec.Mode), so that the operator's code reads the API as one package.

// Spec types, defined in package spec and documented there.
type (
	Modality                 = spec.Modality
	Score                    = spec.Score
	LocalObjectReference     = spec.LocalObjectReference
	LabelSelector            = spec.LabelSelector
	LabelSelectorOperator    = spec.LabelSelectorOperator
	LabelSelectorRequirement = spec.LabelSelectorRequirement
	LabelValue               = spec.LabelValue
	ClassifierSpec           = spec.ClassifierSpec
	BuiltinPack              = spec.BuiltinPack
	Detector                 = spec.Detector
	BuiltinBackend           = spec.BuiltinBackend
	PatternRule              = spec.PatternRule
	KeywordMatch             = spec.KeywordMatch
	KeywordRule              = spec.KeywordRule
	ModerationBackend        = spec.ModerationBackend
	CategoryMapping          = spec.CategoryMapping
	JudgeFormat              = spec.JudgeFormat
	LLMBackend               = spec.LLMBackend
	WebhookBackend           = spec.WebhookBackend
	Category                 = spec.Category
	QuestionType             = spec.QuestionType
	Question                 = spec.Question
	Criterion                = spec.Criterion
	SecretKeyReference       = spec.SecretKeyReference
	CacheSpec                = spec.CacheSpec
	Mode                     = spec.Mode
	Phase                    = spec.Phase
	Action                   = spec.Action
	RuleAction               = spec.RuleAction
	RefusalPolicy            = spec.RefusalPolicy
	UnsupportedPolicy        = spec.UnsupportedPolicy
	FailurePolicy            = spec.FailurePolicy
	MessageScope             = spec.MessageScope
	Segmentation             = spec.Segmentation
	GuardrailSpec            = spec.GuardrailSpec
	CategoryThreshold        = spec.CategoryThreshold
	Rule                     = spec.Rule
	StreamingSpec            = spec.StreamingSpec
)

// Spec constants, defined in package spec.
const (
	ModalityText                = spec.ModalityText
	ModalityImage               = spec.ModalityImage
	ModalityAudio               = spec.ModalityAudio
	ModalityFile                = spec.ModalityFile
	LabelSelectorOpIn           = spec.LabelSelectorOpIn
	LabelSelectorOpNotIn        = spec.LabelSelectorOpNotIn
	LabelSelectorOpExists       = spec.LabelSelectorOpExists
	LabelSelectorOpDoesNotExist = spec.LabelSelectorOpDoesNotExist
	PackPII                     = spec.PackPII
	PackSecrets                 = spec.PackSecrets
	PackPromptInjection         = spec.PackPromptInjection
	KeywordCaseInsensitive      = spec.KeywordCaseInsensitive
	KeywordCaseSensitive        = spec.KeywordCaseSensitive
	JudgeScores                 = spec.JudgeScores
	JudgeLlamaGuard             = spec.JudgeLlamaGuard
	QuestionBoolean             = spec.QuestionBoolean
	QuestionChoice              = spec.QuestionChoice
	QuestionScore               = spec.QuestionScore
	ModeEnforce                 = spec.ModeEnforce
	ModeReport                  = spec.ModeReport
	PhaseInput                  = spec.PhaseInput
	PhaseStream                 = spec.PhaseStream
	PhaseOutput                 = spec.PhaseOutput
	PhaseToolCalls              = spec.PhaseToolCalls
	PhaseToolResults            = spec.PhaseToolResults
	ActionBlock                 = spec.ActionBlock
	ActionStrip                 = spec.ActionStrip
	ActionRedact                = spec.ActionRedact
	ActionWarn                  = spec.ActionWarn
	ActionPseudonymize          = spec.ActionPseudonymize
	RefusalMatch                = spec.RefusalMatch
	RefusalIgnore               = spec.RefusalIgnore
	UnsupportedBlock            = spec.UnsupportedBlock
	UnsupportedWarn             = spec.UnsupportedWarn
	UnsupportedAllow            = spec.UnsupportedAllow
	FailClosed                  = spec.FailClosed
	FailOpen                    = spec.FailOpen
	MessagesLast                = spec.MessagesLast
	MessagesAll                 = spec.MessagesAll
	SegmentCumulative           = spec.SegmentCumulative
	SegmentSentences            = spec.SegmentSentences
	HoldBackUnbounded           = spec.HoldBackUnbounded
)

// LabelSelectorToMetaV1 returns the selector as a metav1.LabelSelector, for the label
// parser of apimachinery. A nil selector stays nil.
func LabelSelectorToMetaV1(s *LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	for _, e := range s.MatchExpressions {
		r := metav1.LabelSelectorRequirement{Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator)}
		for _, v := range e.Values {
			r.Values = append(r.Values, string(v))
		}
		out.MatchExpressions = append(out.MatchExpressions, r)
	}
	return out
}
