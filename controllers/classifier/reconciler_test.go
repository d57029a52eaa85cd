package classifier

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

func webhookClassifier(url string) *v1alpha1.Classifier {
	return &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "judge", Generation: 3},
		Spec: v1alpha1.ClassifierSpec{
			Webhook:              &v1alpha1.WebhookBackend{URL: url},
			Categories:           []v1alpha1.Category{{ID: "fraud"}},
			CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "db-password", Key: "apiKey"},
		},
	}
}

// allowLocalURLs sets the manager's flag for one test.
func allowLocalURLs(t *testing.T, allow bool) {
	t.Helper()
	prev := AllowLocalURLs
	AllowLocalURLs = allow
	t.Cleanup(func() { AllowLocalURLs = prev })
}

func TestReconcileSpecStallsALocalBackendURLUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		url       string
		allow     bool
		wantStall string // a part of the Stalled message; empty: not stalled
	}{
		{"a loopback URL stalls the Classifier", "http://127.0.0.1:8080/classify", false, `spec.webhook.url: Invalid value: "http://127.0.0.1:8080/classify": 127.0.0.1 is a loopback address`},
		{"the metadata endpoint stalls the Classifier", "http://169.254.169.254/latest/meta-data/", false, "169.254.169.254 is a link-local address"},
		{"localhost stalls the Classifier", "http://localhost:9000/", false, "localhost is a loopback address"},
		{"IPv6 loopback stalls the Classifier", "http://[::1]:9000/", false, "::1 is a loopback address"},
		{"--classifier-allow-local-urls lets a loopback URL through", "http://127.0.0.1:8080/classify", true, ""},
		{"--classifier-allow-local-urls lets the metadata endpoint through", "http://169.254.169.254/", true, ""},
		{"a Service of the cluster is not stalled", "http://judge.ml.svc.cluster.local/classify", false, ""},
		{"a bare service name is not stalled", "http://judge:8080/classify", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowLocalURLs(t, tc.allow)
			c := webhookClassifier(tc.url)
			_, err := (&Reconciler{}).CheckSpec(context.Background(), c)
			stalled := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionStalled)
			if tc.wantStall == "" {
				if err != nil || stalled != nil {
					t.Fatalf("err = %v, Stalled = %+v; want neither", err, stalled)
				}
				if c.Status.Backend != "webhook" {
					t.Errorf("status.backend = %q, want webhook", c.Status.Backend)
				}
				return
			}
			if !status.IsTerminal(err) {
				t.Fatalf("err = %v, want a terminal error", err)
			}
			if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != v1alpha1.ReasonInvalidSpec {
				t.Fatalf("Stalled = %+v, want True/InvalidSpec", stalled)
			}
			if !strings.Contains(stalled.Message, tc.wantStall) || !strings.Contains(stalled.Message, "--classifier-allow-local-urls") {
				t.Errorf("Stalled message %q does not contain %q and the flag", stalled.Message, tc.wantStall)
			}
			if c.Status.Backend != "webhook" {
				t.Errorf("status.backend = %q: a Stalled Classifier still shows its backend", c.Status.Backend)
			}
		})
	}
}

// A spec that does not compile and names a local URL reports both at once.
func TestReconcileSpecReportsCompileErrorsAndTheLocalURLTogether(t *testing.T) {
	allowLocalURLs(t, false)
	c := webhookClassifier("http://127.0.0.1/")
	c.Spec.Categories = nil
	_, err := (&Reconciler{}).CheckSpec(context.Background(), c)
	stalled := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionStalled)
	if !status.IsTerminal(err) || stalled == nil {
		t.Fatalf("err = %v, Stalled = %+v; want a terminal stall", err, stalled)
	}
	for _, want := range []string{"spec.categories", "spec.webhook.url"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("Stalled message %q does not name %s", stalled.Message, want)
		}
	}
}
