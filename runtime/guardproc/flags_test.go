package guardproc

import (
	"slices"
	"strings"
	"testing"
)

func TestFlagLists(t *testing.T) {
	if got := PassThrough(" /v1/a, ,/v1/b,"); !slices.Equal(got, []string{"/v1/a", "/v1/b"}) {
		t.Errorf("PassThrough = %q", got)
	}
	if got := PassThrough(""); got != nil {
		t.Errorf("PassThrough(\"\") = %q, want none", got)
	}
	set, err := PodLabels("app=chat,tier=web")
	if err != nil || set["app"] != "chat" || set["tier"] != "web" {
		t.Errorf("PodLabels = %v, %v", set, err)
	}
	if set, err := PodLabels(""); set != nil || err != nil {
		t.Errorf("PodLabels(\"\") = %v, %v; want every guardrail selected", set, err)
	}
	if _, err := PodLabels("app"); err == nil || !strings.Contains(err.Error(), "--pod-labels") {
		t.Errorf("PodLabels(\"app\") error %v, want one naming the flag", err)
	}
}
