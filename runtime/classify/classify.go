// Package classify defines the contract between the enforcement engine and the classifier
// backends: what a classifier is given, what it answers, and the typed
// errors an evaluation failure carries. It has no network and no Kubernetes dependency; the
// backends live in sub-packages.
package classify

import (
	"context"
	"errors"
	"fmt"
)

// Modality is the kind of a content part.
type Modality uint8

// Modalities, in the order of Guardrail.spec.modalities.
const (
	Text Modality = iota
	Image
	Audio
	File
)

// String returns the API spelling of the modality.
func (m Modality) String() string {
	switch m {
	case Text:
		return "text"
	case Image:
		return "image"
	case Audio:
		return "audio"
	case File:
		return "file"
	}
	return fmt.Sprintf("modality(%d)", uint8(m))
}

// ModalitySet is a set of modalities, one bit per Modality: those a classifier inspects,
// or those a guardrail judges.
type ModalitySet uint8

// Has reports whether m is in the set.
func (s ModalitySet) Has(m Modality) bool { return s&(1<<m) != 0 }

// With returns the set with m added.
func (s ModalitySet) With(m Modality) ModalitySet { return s | 1<<m }

// Part is one non-text content part to judge. Media are passed by reference and never
// fetched by the guard.
type Part struct {
	Modality Modality
	// URL is the part's reference as the client sent it (https: or data: URL, or a file id).
	URL string
	// MIMEType is the part's media type when known.
	MIMEType string
}

// Input is what one classifier call judges: the text (already truncated to the effective
// maxInputChars) and, when a media modality is judged, the parts.
type Input struct {
	Text  string
	Parts []Part
	// More says that Text ends where a channel that is still streaming has got to: more
	// text may follow. A span-capable classifier then does not treat the end of Text as a
	// boundary: a match that more text could extend, or a beginning that more text could
	// turn into a match, is pending. It returns no span for it and reports where the
	// pending text starts in Result.Open. Backends without spans ignore More.
	More bool
}

// AnswerType tells an answer from a refusal.
type AnswerType uint8

const (
	// Answered means the judge answered the question.
	Answered AnswerType = iota
	// Refused means the judge refused to answer; a refusal has no probability, choice or score.
	Refused
)

// Answer is a judge's answer to one authored question. Probability applies to boolean
// questions, Choice to choice questions, Score to score questions.
type Answer struct {
	Type        AnswerType
	Probability float64
	Choice      string
	Score       float64
}

// Span is a matched range of Input.Text, in bytes, with the index of the authored category
// it belongs to. Only span-capable classifiers (built-in) return spans.
type Span struct {
	Start, End int
	Category   int
}

// Result is a classifier's answer. Scores and Refusals are indexed by the classifier's
// categories in authored order; Answers by its questions in authored order. A backend
// returns exactly one entry per authored category (or question); anything else is an
// invalid answer and must be reported as an *Error with code InvalidAnswer.
type Result struct {
	Scores []float64
	// Refusals marks categories the judge refused to score; nil when none were refused.
	Refusals []bool
	Answers  []Answer
	Spans    []Span
	// Open is set by span-capable classifiers (built-in) when Input.More is set: the byte
	// offset in Input.Text of the earliest character that text still to come could make
	// part of a match — the start of a match still arriving, or of a beginning that could
	// become one. len(Input.Text) when nothing is pending. Text before Open is settled:
	// its spans are final and no later text can add one that starts there; every span
	// ends at or before Open. The engine releases a stream only up to Open. Ignored when Input.More is not set, and for classifiers without spans.
	Open int
}

// Classifier judges content. Implementations are safe for concurrent use and honour ctx:
// cancellation and deadlines end the call promptly with an error.
type Classifier interface {
	Classify(ctx context.Context, in Input) (Result, error)
}

// Code is the error code of an evaluation failure, as it appears in decision records.
type Code string

// Error codes of evaluation failures.
const (
	CodeClassifierFailed Code = "CLASSIFIER_FAILED"
	CodeTimeout          Code = "TIMEOUT"
	CodeInvalidAnswer    Code = "INVALID_ANSWER"
	CodeUnsupported      Code = "UNSUPPORTED"
)

// Error is a typed evaluation failure. Its message never contains judged content.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted cause.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// CodeOf maps any error from a Classify call to its code: an *Error keeps its own, a
// context deadline is a timeout, and everything else is a classifier failure.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	default:
		return CodeClassifierFailed
	}
}
