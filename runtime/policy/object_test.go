package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// A guard decodes a snapshot or a policy file's object strictly on its spec only: a spec
// field it does not know is refused (it would otherwise enforce less than the policy
// says), while metadata it does not read and the operator's status are not its business.
func TestObjectsDecodeStrictlyOnTheSpecOnly(t *testing.T) {
	const spec = `"spec":{"mode":"Enforce","classifierRef":{"name":"c"},"reason":"no","timeout":"2s","streaming":{"holdBackChars":"Unbounded"}}`
	for _, tc := range []struct {
		name, json, refused string
	}{
		{"a whole object as the apiserver stores it is read", `{"apiVersion":"guardrail.dev/v1alpha1","kind":"Guardrail",` +
			`"metadata":{"name":"g","namespace":"ns","uid":"u1","generation":3,"labels":{"a":"b"},"creationTimestamp":"2024-05-01T10:00:00Z",` +
			`"managedFields":[{"manager":"kubectl"}],"resourceVersion":"9"},` + spec + `,"status":{"observedGeneration":3,"bogus":1}}`, ""},
		{"an unknown spec field is refused", `{"metadata":{"name":"g"},"spec":{"mode":"Enforce","treshold":0.5}}`, `spec: json: unknown field "treshold"`},
		{"an unknown nested spec field is refused", `{"metadata":{"name":"g"},"spec":{"streaming":{"holdBack":3}}}`, `unknown field "holdBack"`},
		{"a spec value of the wrong type is refused", `{"metadata":{"name":"g"},"spec":{"timeout":"2 days"}}`, `spec: time: unknown unit`},
		{"an unknown top-level field is refused", `{"metadata":{"name":"g"},` + spec + `,"specs":{}}`, `unknown field "specs"`},
		{"metadata the guard reads must have its type", `{"metadata":{"name":"g","generation":"four"},` + spec + `}`, `metadata: json: cannot unmarshal string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g GuardrailObject
			err := json.Unmarshal([]byte(tc.json), &g)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want one containing %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Key() != "ns/g" || g.UID != "u1" || g.Generation != 3 || g.Spec.Timeout.String() != "2s" ||
				g.Spec.Streaming.HoldBackChars.String() != "Unbounded" {
				t.Fatalf("read %+v", g)
			}
			// What the operator sends back out is the envelope alone: no status, no
			// metadata the guard does not read.
			b, _ := json.Marshal(g)
			if strings.Contains(string(b), "status") || strings.Contains(string(b), "labels") {
				t.Errorf("re-encoded with fields the guard does not read: %s", b)
			}
		})
	}
}
