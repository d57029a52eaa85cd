package fakeprovider

import (
	"strings"
	"testing"
)

// EchoLast reads the last message of each family's request shape and echoes it, as text
// or, with tools declared, as a tool call's HTML-escaped JSON arguments.
func TestEchoLastRepeatsTheLastMessageOfEveryFamily(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"chat, string content", `{"messages":[{"role":"user","content":"old"},{"role":"user","content":"mail <EMAIL_1>"}]}`},
		{"chat, text parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"mail "},{"type":"text","text":"<EMAIL_1>"}]}]}`},
		{"responses, string input", `{"input":"mail <EMAIL_1>"}`},
		{"responses, input items", `{"input":[{"role":"user","content":"old"},{"role":"user","content":[{"type":"input_text","text":"mail <EMAIL_1>"}]}]}`},
		{"messages, blocks", `{"messages":[{"role":"user","content":[{"type":"text","text":"mail <EMAIL_1>"}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := EchoLast(4)(&Request{Body: []byte(tc.body)})
			var got strings.Builder
			for _, d := range s.Choices[0].Deltas {
				if len(d.Text) > 4 {
					t.Fatalf("a delta of %d bytes", len(d.Text))
				}
				got.WriteString(d.Text)
			}
			if got.String() != "You said: mail <EMAIL_1>" {
				t.Fatalf("echoed %q", got.String())
			}
			withTools := strings.Replace(tc.body, "{", `{"tools":[{"name":"x"}],`, 1)
			s = EchoLast(3)(&Request{Body: []byte(withTools)})
			ds := s.Choices[0].Deltas
			var args strings.Builder
			for _, d := range ds[1:] {
				args.WriteString(d.Text)
			}
			if ds[0].Kind != ToolCallStart || ds[0].Name != EchoTool || args.String() != `{"note":"mail \u003cEMAIL_1\u003e"}` {
				t.Fatalf("tool call %+v %s", ds[0], args.String())
			}
		})
	}
}
