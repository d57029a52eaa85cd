package wire

import (
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// maxModelName bounds the model name ModelName returns: a provider's model names are
// short identifiers, and what is longer is not one.
const maxModelName = 256

// ModelName returns the model a response names, from the raw JSON value of its model
// member (Gemini's modelVersion): its string, or "" when it is not a string, is empty,
// or is longer than a model name is.
func ModelName(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' || len(raw) > 2*maxModelName+2 {
		return ""
	}
	s, ok := jsonx.RawString(raw)
	if !ok || len(s) > maxModelName || !utf8.ValidString(s) {
		return ""
	}
	return s
}

// Model returns the model that answered, as the stream's events named it so far (chat
// chunks' model, Messages' message_start, Responses' response.created, Gemini's
// modelVersion), or "". The codecs keep it anyway, for the events the guard writes: no
// event is decoded or kept further for it.
func (s *Stream) Model() string {
	if s == nil {
		return ""
	}
	switch c := s.c.(type) {
	case *chatCodec:
		return ModelName(c.model)
	case *messagesCodec:
		if len(c.model) > maxModelName || !utf8.ValidString(c.model) {
			return ""
		}
		return c.model
	case *responsesCodec:
		var f [1][]byte
		if len(c.template) > 0 && s.tab.ScanFields(c.template, modelField, f[:]) {
			return ModelName(f[0])
		}
	case *geminiCodec:
		return ModelName(c.modelVersion)
	}
	return ""
}

// modelField is the member Model reads of a Responses template (the response object of
// response.created).
var modelField = []string{"model"}
