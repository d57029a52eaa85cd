package content

import "testing"

// Decision records carry these spellings; changing one changes what operators query.
func TestChannelString(t *testing.T) {
	cases := []struct {
		name string
		ch   Channel
		want string
	}{
		{"the answer text of the first choice", Channel{Kind: Text}, "choice[0].text"},
		{"reasoning of a later choice", Channel{Choice: 2, Kind: Reasoning}, "choice[2].reasoning"},
		{"a tool call is spelled with its index", Channel{Kind: ToolCall, Index: 2}, "choice[0].toolCall[2]"},
		{"the object leaves out its part index", Channel{Kind: Object, Index: 3}, "choice[0].object"},
		{"an unknown kind is spelled by number", Channel{Kind: 9}, "choice[0].channel(9)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ch.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
