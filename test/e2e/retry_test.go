package e2e

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// countingClient is an HTTP client that counts the attempts an SDK makes, answered or
// not (a refused connection counts too).
type countingClient struct {
	attempts atomic.Int32
	base     http.RoundTripper
}

func (c *countingClient) RoundTrip(r *http.Request) (*http.Response, error) {
	c.attempts.Add(1)
	return c.base.RoundTrip(r)
}

func newCountingClient() (*countingClient, *http.Client) {
	c := &countingClient{base: http.DefaultTransport.(*http.Transport).Clone()}
	return c, &http.Client{Transport: c}
}

// refusedURL is a loopback address where nothing listens.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	_ = l.Close()
	return url
}

// TestUnreachableProviderIsRetriedByTheSDKs: with the provider down, an SDK makes as many
// attempts through the guard as it makes against the provider directly (its own retry
// policy: 1 + 2 retries by default), because the guard's 502 does not tell it to stop.
func TestUnreachableProviderIsRetriedByTheSDKs(t *testing.T) {
	down := refusedURL(t)
	g := startGuard(t, inputOnly(t), upstream(down))

	for _, tc := range []struct {
		name   string
		family string
		call   func(ctx context.Context, baseURL string, hc *http.Client) error
		check  func(t *testing.T, err error)
	}{
		{"openai-go, chat completion", "chat/completions", func(ctx context.Context, base string, hc *http.Client) error {
			c := openai.NewClient(oaoption.WithBaseURL(base+"/v1/"), oaoption.WithAPIKey(apiKey), oaoption.WithHTTPClient(hc))
			_, err := c.Chat.Completions.New(ctx, chatParams("hi"))
			return err
		}, func(t *testing.T, err error) {
			if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusBadGateway || apiErr.Code != "upstream_unreachable" {
				t.Errorf("through the guard: %v, want a 502 upstream_unreachable", err)
			}
		}},
		{"openai-go, streamed chat completion", "chat/completions", func(ctx context.Context, base string, hc *http.Client) error {
			c := openai.NewClient(oaoption.WithBaseURL(base+"/v1/"), oaoption.WithAPIKey(apiKey), oaoption.WithHTTPClient(hc))
			_, _, err := chatStream(ctx, c, chatParams("hi"))
			return err
		}, func(t *testing.T, err error) {
			if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusBadGateway {
				t.Errorf("through the guard: %v, want a 502", err)
			}
		}},
		{"anthropic-sdk-go, message", "messages", func(ctx context.Context, base string, hc *http.Client) error {
			c := anthropic.NewClient(antoption.WithBaseURL(base), antoption.WithAPIKey(apiKey), antoption.WithHTTPClient(hc))
			_, err := c.Messages.New(ctx, messageParams("hi"))
			return err
		}, func(t *testing.T, err error) {
			if apiErr, ok := errAs[*anthropic.Error](err); !ok || apiErr.StatusCode != http.StatusBadGateway || apiErr.ErrorCode() != "upstream_unreachable" {
				t.Errorf("through the guard: %v, want a 502 upstream_unreachable", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, hc := newCountingClient()
			if err := tc.call(testContext(t), down, hc); err == nil {
				t.Fatal("the provider is down, yet the direct call succeeded")
			}
			series := `guard_requests_total{family="` + tc.family + `",outcome="upstream_error"}`
			before := g.metric(series)
			guarded, hc := newCountingClient()
			err := tc.call(testContext(t), g.URL, hc)
			tc.check(t, err)
			if n := direct.attempts.Load(); n < 2 {
				t.Fatalf("the SDK made %d attempts directly; the test needs an SDK that retries", n)
			}
			if got, want := guarded.attempts.Load(), direct.attempts.Load(); got != want {
				t.Errorf("the SDK made %d attempts through the guard, %d directly", got, want)
			}
			if got, want := g.metric(series)-before, float64(guarded.attempts.Load()); got != want {
				t.Errorf("the guard answered %v requests upstream_error, the SDK made %v attempts", got, want)
			}
		})
	}

	t.Run("a policy verdict still tells the SDKs not to retry", func(t *testing.T) {
		g := startGuard(t, bluebird(t, v1alpha1.PhaseInput), upstream(down))
		counter, hc := newCountingClient()
		c := openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(apiKey), oaoption.WithHTTPClient(hc))
		_, err := c.Chat.Completions.New(testContext(t), chatParams("tell me about bluebird"))
		if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.Code != "content_policy_violation" {
			t.Fatalf("got %v, want content_policy_violation", err)
		}
		if n := counter.attempts.Load(); n != 1 {
			t.Errorf("the SDK made %d attempts for a block, want 1", n)
		}
	})
}
