package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authnv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// identity is who a guard is: the pod its token is bound to.
type identity struct {
	namespace, pod, podUID string
	expires                time.Time
}

// refusal is an authentication failure: the HTTP status and a reason for the metric.
type refusal struct {
	status int
	reason string
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// HTTPStatus and MetricReason make a refusal an intake.Refusal: a batch whose token is
// refused is refused alike.
func (r *refusal) HTTPStatus() int      { return r.status }
func (r *refusal) MetricReason() string { return r.reason }

const (
	// maxTokenCache bounds the cache of reviewed tokens.
	maxTokenCache = 100_000
	// maxTokenCacheTTL bounds how long a review is trusted, whatever the token's expiry.
	maxTokenCacheTTL = 10 * time.Minute
	// podNameKey and podUIDKey are the extra fields of a pod-bound token's user.
	podNameKey = "authentication.kubernetes.io/pod-name"
	podUIDKey  = "authentication.kubernetes.io/pod-uid"
)

// authenticator validates guards' tokens with TokenReview and caches each review for the
// token's lifetime (at most maxTokenCacheTTL), so that a reconnect storm is not a
// TokenReview storm. Only positive reviews are cached; the pod binding is checked on
// every request by the caller.
type authenticator struct {
	client  client.Client
	metrics *metrics
	now     func() time.Time

	mu    sync.Mutex
	cache map[[sha256.Size]byte]identity
}

func newAuthenticator(c client.Client, m *metrics) *authenticator {
	return &authenticator{client: c, metrics: m, now: time.Now, cache: map[[sha256.Size]byte]identity{}}
}

// authenticate returns the identity of a bearer token, or a *refusal.
func (a *authenticator) authenticate(ctx context.Context, token string) (identity, error) {
	if token == "" {
		return identity{}, &refusal{401, "missing_token", "a bearer token (audience " + guardv1.Audience + ") is required"}
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.Lock()
	id, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(id.expires) {
		return id, nil
	}

	a.metrics.tokenReviews.Inc()
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{guardv1.Audience}}}
	if err := a.client.Create(ctx, tr); err != nil {
		return identity{}, fmt.Errorf("TokenReview: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		return identity{}, &refusal{401, "unauthenticated", "the token is not valid for audience " + guardv1.Audience}
	}
	if !slices.Contains(st.Audiences, guardv1.Audience) {
		return identity{}, &refusal{401, "wrong_audience", "the token is not valid for audience " + guardv1.Audience}
	}
	ns, ok := serviceAccountNamespace(st.User.Username)
	pod, uid := first(st.User.Extra[podNameKey]), first(st.User.Extra[podUIDKey])
	if !ok || pod == "" || uid == "" {
		return identity{}, &refusal{403, "not_pod_bound", "the token is not bound to a pod: mount a projected service-account token"}
	}
	id = identity{namespace: ns, pod: pod, podUID: uid, expires: now.Add(maxTokenCacheTTL)}
	if exp, ok := expiry(token); ok && exp.Before(id.expires) {
		id.expires = exp
	}
	a.mu.Lock()
	if len(a.cache) >= maxTokenCache {
		for k, v := range a.cache {
			if !now.Before(v.expires) || len(a.cache) >= maxTokenCache {
				delete(a.cache, k)
			}
		}
	}
	a.cache[key] = id
	a.mu.Unlock()
	return id, nil
}

// serviceAccountNamespace reads system:serviceaccount:<namespace>:<name>.
func serviceAccountNamespace(user string) (string, bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", false
	}
	ns, name, ok := strings.Cut(rest, ":")
	return ns, ok && ns != "" && name != ""
}

func first(v authnv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// expiry reads a JWT's exp claim, after the apiserver has validated the token: it bounds
// how long the review is cached, nothing else.
func expiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, false
	}
	sec, err := claims.Exp.Int64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// asRefusal unwraps a *refusal.
func asRefusal(err error) (*refusal, bool) {
	var r *refusal
	ok := errors.As(err, &r)
	return r, ok
}
