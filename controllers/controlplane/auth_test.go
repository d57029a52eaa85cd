package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// jwt is a token with only an exp claim: the apiserver (here, the fake) validates it; the
// authenticator reads exp only to bound its cache.
func jwt(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"exp":%d}`, exp.Unix()))) + ".sig"
}

// TestReviewsAreCachedUntilTheTokenExpires: a reconnect storm costs no TokenReview, and an
// expired token is reviewed again (and refused) instead of served from the cache.
func TestReviewsAreCachedUntilTheTokenExpires(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	now := time.Unix(1_800_000_000, 0)
	reviews, valid := 0, true
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			reviews++
			tr := obj.(*authnv1.TokenReview)
			tr.Status = authnv1.TokenReviewStatus{Authenticated: valid, Audiences: []string{guardv1.Audience},
				User: authnv1.UserInfo{Username: "system:serviceaccount:shop:app", Extra: map[string]authnv1.ExtraValue{
					podNameKey: {"web-1"}, podUIDKey: {"uid-1"}}}}
			return nil
		},
	}).Build()
	a := newAuthenticator(c, serverMetrics)
	a.now = func() time.Time { return now }
	tok := jwt(now.Add(90 * time.Second))

	for range 100 {
		id, err := a.authenticate(context.Background(), tok)
		if err != nil || id.namespace != "shop" || id.pod != "web-1" || id.podUID != "uid-1" {
			t.Fatalf("identity %+v, %v", id, err)
		}
	}
	if reviews != 1 {
		t.Errorf("100 polls with one token made %d TokenReviews, want 1", reviews)
	}
	now = now.Add(91 * time.Second) // past exp, well within the cache's own bound
	valid = false
	if _, err := a.authenticate(context.Background(), tok); err == nil {
		t.Error("an expired token was served from the cache")
	} else if r, ok := asRefusal(err); !ok || r.status != 401 {
		t.Errorf("an expired token: %v, want a 401 refusal", err)
	}
	if reviews != 2 {
		t.Errorf("an expired token was not reviewed again (%d reviews)", reviews)
	}
}
