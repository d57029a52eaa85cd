package builtin

import "testing"

// Category ids are lowercase RFC 1123 labels; the edges of each character range.
func TestValidCategory(t *testing.T) {
	for id, ok := range map[string]bool{
		"a": true, "z": true, "0": true, "9": true, "az09": true, "a-b": true, "a--b": true,
		"": false, "-a": false, "a-": false, "-": false, "A": false, "a_b": false, "a.b": false,
		"`": false, "{": false, "/": false, ":": false, "a b": false,
		"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk":  true,
		"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl": false,
	} {
		if err := validCategory(id); (err == nil) != ok {
			t.Errorf("validCategory(%q) = %v, want ok %v", id, err, ok)
		}
	}
}
