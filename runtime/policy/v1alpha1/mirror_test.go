package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/meta/intstr"
	guardmetav1 "github.com/guardrail-dev/guardrail-operator/runtime/policy/meta/v1"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/v1alpha1"
)

// filler fills objects of both packages with random values, every field included. Only the
// raw set of managed fields and this package's own Time and IntOrString need help to hold
// values JSON can carry (the API's Time and IntOrString fill themselves so).
func filler(seed int64) *randfill.Filler {
	fieldsV1 := func(c randfill.Continue) []byte {
		key, _ := json.Marshal("f:" + c.String(8))
		return []byte(fmt.Sprintf(`{"f:spec":{%s:{}}}`, key))
	}
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(f *metav1.FieldsV1, c randfill.Continue) { f.SetRawBytes(fieldsV1(c)) },
		func(f *guardmetav1.FieldsV1, c randfill.Continue) { f.Raw = fieldsV1(c) },
		func(t *guardmetav1.Time, c randfill.Continue) { t.Time = time.Unix(c.Int63n(1000*365*24*3600), 0) },
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromString(c.String(0))
			} else {
				*v = intstr.FromInt32(c.Int31() - c.Int31())
			}
		},
	)
}

// roundTrip encodes from, decodes the JSON strictly (no unknown field) into to, and
// requires to to encode to the very same bytes.
func roundTrip(t *testing.T, from, to any) {
	t.Helper()
	a, err := json.Marshal(from)
	if err != nil {
		t.Fatalf("marshal %T: %v", from, err)
	}
	dec := json.NewDecoder(bytes.NewReader(a))
	dec.DisallowUnknownFields()
	if err := dec.Decode(to); err != nil {
		t.Fatalf("decoding the JSON of %T into %T: %v\n%s", from, to, err, a)
	}
	b, err := json.Marshal(to)
	if err != nil {
		t.Fatalf("marshal %T: %v", to, err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%T re-encodes the JSON of %T differently:\n %s\n %s", to, from, a, b)
	}
}

// The copy holds every field of the API objects — metadata, spec and status — with the
// same JSON: the API's JSON decodes strictly into it and re-encodes byte for byte, and so
// does its JSON into the API's types. A field added to the API and not here fails.
func TestMirrorsTheAPI(t *testing.T) {
	f := filler(1)
	for range 500 {
		var ac api.Classifier
		f.Fill(&ac)
		roundTrip(t, &ac, &v1alpha1.Classifier{})
		var ag api.Guardrail
		f.Fill(&ag)
		roundTrip(t, &ag, &v1alpha1.Guardrail{})

		var mc v1alpha1.Classifier
		f.Fill(&mc)
		roundTrip(t, &mc, &api.Classifier{})
		var mg v1alpha1.Guardrail
		f.Fill(&mg)
		roundTrip(t, &mg, &api.Guardrail{})
	}
	// Zero values, as the operator strips objects for a snapshot.
	roundTrip(t, &api.Classifier{}, &v1alpha1.Classifier{})
	roundTrip(t, &api.Guardrail{}, &v1alpha1.Guardrail{})
	roundTrip(t, &v1alpha1.Guardrail{}, &api.Guardrail{})
}

// A decoding error reads the same: the types are named as in the API.
func TestDecodeErrorsMatchTheAPI(t *testing.T) {
	docs := []string{
		`{"spec":{"mode":5}}`,
		`{"spec":{"threshold":"high"}}`,
		`{"spec":{"timeout":5}}`,
		`{"spec":{"timeout":"5 parsecs"}}`,
		`{"spec":{"streaming":{"holdBackChars":1.5}}}`,
		`{"spec":{"streaming":{"holdBackChars":{}}}}`,
		`{"spec":{"selector":{"matchLabels":{"a":1}}}}`,
		`{"spec":{"phases":"Input"}}`,
		`{"metadata":{"name":1}}`,
		`{"metadata":{"creationTimestamp":"yesterday"}}`,
		`{"metadata":{"labels":[]}}`,
		`{"spec":{"priority":1e10}}`,
		`{"spec":{"treshold":0.5}}`,
		`{"status":{"enforcement":{"selectedPods":"x"}}}`,
		`{"metadata":{"uid":5}}`,
		`{"metadata":{"ownerReferences":{}}}`,
		`{"metadata":{"ownerReferences":[{"uid":1}]}}`,
		`{"metadata":{"managedFields":[{"operation":1}]}}`,
		`{"metadata":{"managedFields":[{"fieldsV1":[1]}]},"spec":{"mode":1}}`,
		`{"status":{"conditions":[{"status":true}]}}`,
		`{"status":{"conditions":[{"lastTransitionTime":"now"}]}}`,
		`{"status":{"lastDecisionTime":7}}`,
		`{"kind":1}`,
		`[1]`,
		`"guardrail"`,
	}
	for _, doc := range docs {
		decode := func(v any) string {
			dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				return err.Error()
			}
			return ""
		}
		if ours, theirs := decode(&v1alpha1.Guardrail{}), decode(&api.Guardrail{}); ours != theirs || ours == "" {
			t.Errorf("%s:\n ours   %s\n theirs %s", doc, ours, theirs)
		}
	}
}

// The constants are the API's.
func TestConstantsAreTheAPIs(t *testing.T) {
	pairs := [][2]string{
		{v1alpha1.APIVersion, api.GroupVersion.String()},
		{v1alpha1.GroupName, api.GroupVersion.Group},
		{v1alpha1.ReasonInvalidSpec, api.ReasonInvalidSpec},
		{v1alpha1.ReasonSecretNotFound, api.ReasonSecretNotFound},
		{v1alpha1.ReasonClassifierNotFound, api.ReasonClassifierNotFound},
		{v1alpha1.ReasonClassifierMismatch, api.ReasonClassifierMismatch},
		{string(v1alpha1.ModalityText), string(api.ModalityText)},
		{string(v1alpha1.ModalityImage), string(api.ModalityImage)},
		{string(v1alpha1.ModalityAudio), string(api.ModalityAudio)},
		{string(v1alpha1.ModalityFile), string(api.ModalityFile)},
		{string(v1alpha1.LabelSelectorOpIn), string(api.LabelSelectorOpIn)},
		{string(v1alpha1.LabelSelectorOpNotIn), string(api.LabelSelectorOpNotIn)},
		{string(v1alpha1.LabelSelectorOpExists), string(api.LabelSelectorOpExists)},
		{string(v1alpha1.LabelSelectorOpDoesNotExist), string(api.LabelSelectorOpDoesNotExist)},
		{string(v1alpha1.PackPII), string(api.PackPII)},
		{string(v1alpha1.PackSecrets), string(api.PackSecrets)},
		{string(v1alpha1.PackPromptInjection), string(api.PackPromptInjection)},
		{string(v1alpha1.KeywordCaseInsensitive), string(api.KeywordCaseInsensitive)},
		{string(v1alpha1.KeywordCaseSensitive), string(api.KeywordCaseSensitive)},
		{string(v1alpha1.JudgeScores), string(api.JudgeScores)},
		{string(v1alpha1.JudgeLlamaGuard), string(api.JudgeLlamaGuard)},
		{string(v1alpha1.QuestionBoolean), string(api.QuestionBoolean)},
		{string(v1alpha1.QuestionChoice), string(api.QuestionChoice)},
		{string(v1alpha1.QuestionScore), string(api.QuestionScore)},
		{string(v1alpha1.ModeEnforce), string(api.ModeEnforce)},
		{string(v1alpha1.ModeReport), string(api.ModeReport)},
		{string(v1alpha1.PhaseInput), string(api.PhaseInput)},
		{string(v1alpha1.PhaseStream), string(api.PhaseStream)},
		{string(v1alpha1.PhaseOutput), string(api.PhaseOutput)},
		{string(v1alpha1.PhaseToolCalls), string(api.PhaseToolCalls)},
		{string(v1alpha1.ActionBlock), string(api.ActionBlock)},
		{string(v1alpha1.ActionStrip), string(api.ActionStrip)},
		{string(v1alpha1.ActionRedact), string(api.ActionRedact)},
		{string(v1alpha1.ActionWarn), string(api.ActionWarn)},
		{string(v1alpha1.RefusalMatch), string(api.RefusalMatch)},
		{string(v1alpha1.RefusalIgnore), string(api.RefusalIgnore)},
		{string(v1alpha1.UnsupportedBlock), string(api.UnsupportedBlock)},
		{string(v1alpha1.UnsupportedWarn), string(api.UnsupportedWarn)},
		{string(v1alpha1.UnsupportedAllow), string(api.UnsupportedAllow)},
		{string(v1alpha1.FailClosed), string(api.FailClosed)},
		{string(v1alpha1.FailOpen), string(api.FailOpen)},
		{string(v1alpha1.MessagesLast), string(api.MessagesLast)},
		{string(v1alpha1.MessagesAll), string(api.MessagesAll)},
		{string(v1alpha1.SegmentCumulative), string(api.SegmentCumulative)},
		{string(v1alpha1.SegmentSentences), string(api.SegmentSentences)},
		{v1alpha1.HoldBackUnbounded, api.HoldBackUnbounded},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("%q, the API's is %q", p[0], p[1])
		}
	}
}
