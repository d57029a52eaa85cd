package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
)

// Option configures New.
type Option func(*options)

type options struct {
	client  *http.Client
	now     func() time.Time
	backoff time.Duration
	// breakerNow is the breaker's clock: the real one but in tests.
	breakerNow func() time.Time
}

// WithHTTPClient makes the classifier send its requests with client instead of a client of
// its own. The client is used as is (its redirect policy included), except that a webhook
// CA bundle is installed on a copy of its *http.Transport. Tests use it to count dials or
// to inject transport failures.
func WithHTTPClient(client *http.Client) Option {
	return func(o *options) { o.client = client }
}

// WithClock sets the clock the answer cache reads to expire its entries (time.Now by
// default). Retries and timeouts always run on the real clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// defaultBackoff is the first retry's delay before jitter; each retry doubles it.
const defaultBackoff = 100 * time.Millisecond

// New returns the backend cfg configures (moderation, llm or webhook). It fails on a
// configuration the policy compiler would have rejected; its errors never contain the
// endpoint URL or the token.
func New(cfg Config, opts ...Option) (classify.Classifier, error) {
	switch cfg.Kind {
	case KindModeration:
		m, err := NewModeration(cfg, opts...)
		if err != nil {
			return nil, err
		}
		return m, nil
	case KindLLM:
		return newJudge(&cfg, opts...)
	case KindWebhook:
		return newWebhook(&cfg, opts...)
	}
	return nil, fmt.Errorf("remote: backend %q is not a remote backend", cfg.Kind)
}

// base is what every remote backend shares: the endpoint, the answer cache, the call
// budget and the input preparation.
type base struct {
	ep         *endpoint
	cache      *cache
	timeout    time.Duration
	maxChars   int
	modalities classify.ModalitySet
}

// newBase builds the shared half of a backend; ca is the webhook's CA bundle (nil for the
// other backends, which trust the system roots).
func newBase(c *Config, name string, ca []byte, opts []Option) (base, error) {
	o := options{now: time.Now, backoff: defaultBackoff, breakerNow: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return base{}, fmt.Errorf("remote: %s url must be an absolute http or https URL", name)
	}
	client, err := httpClient(o.client, ca, c.MaxConcurrency)
	if err != nil {
		return base{}, fmt.Errorf("remote: %s: %w", name, err)
	}
	ep := &endpoint{
		name:    name,
		url:     c.URL,
		token:   c.Token,
		client:  client,
		retries: min(max(c.Retries, 0), maxRetries),
		backoff: o.backoff,
	}
	if c.MaxConcurrency > 0 {
		ep.sem = make(chan struct{}, c.MaxConcurrency)
	}
	ep.breaker = newBreaker(o.breakerNow)
	modalities := c.Modalities
	if modalities == 0 {
		// A configuration without modalities inspects text, the API default.
		modalities = modalities.With(classify.Text)
	}
	return base{
		ep:         ep,
		cache:      newCache(c.Cache, o.now),
		timeout:    max(c.Timeout, 0),
		maxChars:   c.MaxInputChars,
		modalities: modalities,
	}, nil
}

// httpClient returns the client of a classifier: the caller's, or one of its own (an
// egress transport: no proxy, the system's CA bundle) that does not follow redirects (a
// redirect must not carry the bearer token elsewhere) and keeps enough idle connections
// for maxConcurrency calls. A CA bundle replaces the roots.
func httpClient(given *http.Client, ca []byte, maxConcurrency int) (*http.Client, error) {
	if given == nil {
		t := egress.Transport(nil)
		t.MaxIdleConnsPerHost = max(maxConcurrency, 16)
		given = &http.Client{
			Transport:     t,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if len(ca) == 0 {
		return given, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("caBundle holds no PEM certificate")
	}
	rt := given.Transport
	if rt == nil {
		rt = egress.Transport(nil)
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, errors.New("a caBundle needs the client's transport to be an *http.Transport")
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = pool
	client := *given
	client.Transport = t
	return &client, nil
}

// CloseIdleConnections closes the idle connections of the classifier's HTTP client. The
// guard calls it on a backend it replaces (a new policy snapshot), so that the old
// backend's keep-alive connections do not linger.
func (b *base) CloseIdleConnections() { b.ep.client.CloseIdleConnections() }

// prepare checks that the classifier inspects every modality of in and truncates its text
// to the first maxInputChars characters.
func (b *base) prepare(in classify.Input) (classify.Input, error) {
	if in.Text != "" && !b.modalities.Has(classify.Text) {
		return in, unsupported(classify.Text)
	}
	for _, p := range in.Parts {
		if p.Modality == classify.Text || !b.modalities.Has(p.Modality) {
			return in, unsupported(p.Modality)
		}
	}
	in.Text = truncate(in.Text, b.maxChars)
	return in, nil
}

func unsupported(m classify.Modality) error {
	return classify.Errorf(classify.CodeUnsupported, "the classifier does not inspect %s", m)
}

// truncate returns the first n characters (runes) of s; all of s when n <= 0.
func truncate(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// bound applies the classifier's timeout, which covers queueing, every attempt and the
// backoff between them.
func (b *base) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.timeout > 0 {
		return context.WithTimeout(ctx, b.timeout)
	}
	return ctx, func() {}
}

// codec is the backend-specific half of a call.
type codec interface {
	// request returns the body of the request judging in (prepared).
	request(in classify.Input) ([]byte, error)
	// result parses and validates a reply body.
	result(body []byte) (classify.Result, error)
}

// classifier is a remote backend made of the shared call path and a codec.
type classifier struct {
	base
	codec codec
}

// Classify judges in: it checks and truncates the input, answers from the cache when it
// can, and otherwise posts one request (with retries) under the classifier's concurrency
// limit and timeout.
func (k *classifier) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	return k.call(ctx, in, k.codec)
}

func (b *base) call(ctx context.Context, in classify.Input, c codec) (classify.Result, error) {
	in, err := b.prepare(in)
	if err != nil {
		return classify.Result{}, err
	}
	var key cacheKey
	if b.cache != nil {
		key = inputKey(in)
		if res, ok := b.cache.get(key); ok {
			return res, nil
		}
	}
	body, err := c.request(in)
	if err != nil {
		return classify.Result{}, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	reply, err := b.ep.post(ctx, body)
	if err != nil {
		return classify.Result{}, err
	}
	res, err := c.result(reply)
	if err != nil {
		return classify.Result{}, err
	}
	b.cache.put(key, res)
	return res, nil
}
