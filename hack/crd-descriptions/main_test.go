package main

import "testing"

func TestUnwrap(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"joins the lines of a paragraph", "action taken: Redact needs a\nclassifier that returns spans.", "action taken: Redact needs a classifier that returns spans."},
		{"keeps paragraphs", "first line\nsame paragraph\n\nsecond paragraph", "first line same paragraph\n\nsecond paragraph"},
		{"keeps list items on their own lines", "one of:\n- a\n- b\n  continued", "one of:\n- a\n- b continued"},
		{"leaves a single line alone", "name of the rule.", "name of the rule."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unwrap(tt.in); got != tt.want {
				t.Errorf("Unwrap(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
