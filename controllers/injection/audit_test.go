package injection

import (
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
)

// The guard's audit log is off by default, on with the manager's --guard-audit-log, and
// the pod's annotation overrides either; a guard rendered either way verifies, and one
// whose --audit-log the injector would not render does not.
func TestTheAuditLogIsAPerPodSettingOfTheGuardsArgs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		def        bool
		annotation string // "" for none
		want       bool
		refused    bool
	}{
		{"off by default", false, "", false, false},
		{"on with the manager's default", true, "", true, false},
		{"on for one pod", false, "true", true, false},
		{"off for one pod", true, "false", false, false},
		{"a bad value keeps the default", true, "yes please", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.AuditLog = tc.def
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
			if tc.annotation != "" {
				pod.Annotations = map[string]string{guardv1.AnnotationAuditLog: tc.annotation}
			}
			s, refused := resolveSettings(pod.Annotations, cfg)
			if got := slices.ContainsFunc(refused, func(r refusal) bool { return r.annotation == guardv1.AnnotationAuditLog }); got != tc.refused {
				t.Errorf("refused %v, want %v", refused, tc.refused)
			}
			render(pod, cfg, s, []byte("ca"))
			guard, _ := findGuard(pod)
			if got := slices.Contains(guard.Args, "--audit-log=true"); got != tc.want {
				t.Errorf("args %v: audit log %v, want %v", guard.Args, got, tc.want)
			}
			if slices.ContainsFunc(guard.Args, func(a string) bool { return strings.HasPrefix(a, "--audit-log=") && a != "--audit-log=true" }) {
				t.Errorf("args %v", guard.Args)
			}
			// The manager's default may have changed since: verification reads the pod's.
			other := testConfig()
			other.AuditLog = !tc.def
			if err := VerifyGuard(pod, other.Guard()); err != nil {
				t.Errorf("the rendered guard: %v", err)
			}
		})
	}
	cfg := testConfig()
	for _, arg := range []string{"--audit-log=false", "--audit-log=1", "--audit-log"} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		s, _ := resolveSettings(nil, cfg)
		render(pod, cfg, s, []byte("ca"))
		guard, _ := findGuard(pod)
		guard.Args = append(guard.Args, arg)
		if err := VerifyGuard(pod, cfg.Guard()); err == nil {
			t.Errorf("a guard taking %s verified", arg)
		}
	}
}
