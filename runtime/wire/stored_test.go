package wire

import (
	"errors"
	"testing"
)

func TestStoredRequestReadsWhatTheStoredAnswerRepeats(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		model      string
		object     bool
	}{
		{"a text answer", `{"id":"resp_1","object":"response","model":"gpt-4.1","text":{"format":{"type":"text"}},"output":[]}`, "gpt-4.1", false},
		{"a JSON schema answer is the object channel", `{"model":"m","text":{"format":{"type":"json_schema","name":"x","schema":{}}}}`, "m", true},
		{"a JSON object answer is the object channel", `{"model":"m","text":{"format":{"type":"json_object"}}}`, "m", true},
		{"an answer without text settings is text", `{"model":"m"}`, "m", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := StoredRequest(FamilyResponses, []byte(tc.body))
			if err != nil || req.Family != FamilyResponses || req.Model != tc.model || req.Object != tc.object || req.N != 1 {
				t.Errorf("%+v (%v), want model %q object %v", req, err, tc.model, tc.object)
			}
		})
	}
	t.Run("a body that is not an answer is malformed", func(t *testing.T) {
		for _, body := range []string{`[]`, `{"model":5}`, `{"model":`, `event: x`} {
			if _, err := StoredRequest(FamilyResponses, []byte(body)); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: error %v, want ErrMalformed", body, err)
			}
		}
	})
	t.Run("other families have no stored answers", func(t *testing.T) {
		if _, err := StoredRequest(FamilyChat, []byte(`{}`)); err == nil {
			t.Error("no error")
		}
	})
}
