package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

func TestWebhookSendsTheContractAndReadsScores(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.WebhookScores(fake.Scores{"violence": 0.3, "hate": 1}))
	srv := f.Start(t)
	k := newClassifier(t, webhookSpec(srv.URL, token(secretToken), modalities(classify.Text, classify.Image)))
	in := classify.Input{Text: "hello", Parts: []classify.Part{{Modality: classify.Image, URL: "https://img.example/x.png", MIMEType: "image/png"}}}
	res, err := k.Classify(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Scores, []float64{0.3, 1}) || res.Refusals != nil {
		t.Errorf("result = %+v, want scores [0.3 1] and no refusals", res)
	}
	req := f.Requests()[0]
	want := `{"text":"hello","parts":[{"type":"image","url":"https://img.example/x.png","mimeType":"image/png"}],` +
		`"categories":[{"id":"violence","description":"about violence"},{"id":"hate","description":"about hate"}]}`
	if string(req.Body) != want {
		t.Errorf("body = %s\nwant %s", req.Body, want)
	}
	if req.Header.Get("Authorization") != "Bearer "+secretToken || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v, want a bearer token and a JSON content type", req.Header)
	}
}

func TestWebhookRefusedCategoriesMayOmitTheirScore(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.WebhookScores(fake.Scores{"violence": 0.4}, "hate"))
	srv := f.Start(t)
	res, err := classifyText(newClassifier(t, webhookSpec(srv.URL)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Scores, []float64{0.4, 0}) || !slices.Equal(res.Refusals, []bool{false, true}) {
		t.Errorf("result = %+v, want hate refused", res)
	}
}

func TestWebhookReadsAnswers(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.WebhookAnswers(fake.Answers{
		"onTopic": fake.AnswerProbability(0.25), "tone": fake.AnswerChoice("friendly"),
		"severity": map[string]any{"type": "refusal", "score": nil, "rationale": "ignored"},
	}))
	srv := f.Start(t)
	res, err := classifyText(newClassifier(t, webhookSpec(srv.URL, questions(boolean, choice, score))), "x")
	if err != nil {
		t.Fatal(err)
	}
	want := []classify.Answer{{Probability: 0.25}, {Choice: "friendly"}, {Type: classify.Refused}}
	if !slices.Equal(res.Answers, want) {
		t.Errorf("answers = %+v, want %+v", res.Answers, want)
	}
	var body struct {
		Questions []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Criteria []struct{ Value string }
		} `json:"questions"`
		Categories any `json:"categories"`
	}
	if err := f.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Questions) != 3 || body.Questions[2].Type != "score" || body.Questions[1].Criteria[2].Value != "hostile" || body.Categories != nil {
		t.Errorf("request questions = %+v, want the three questions with criteria and no categories", body)
	}
}

func TestWebhookInvalidAnswers(t *testing.T) {
	cases := []struct {
		name  string
		specs []spec
		reply fake.Reply
	}{
		{"a body that is not JSON is invalid", nil, fake.Raw(`scores: 1`)},
		{"a reply without scores is invalid", nil, fake.Raw(`{}`)},
		{"a missing category is invalid", nil, fake.WebhookScores(fake.Scores{"violence": 0.1})},
		{"an extra category is invalid", nil, fake.WebhookScores(fake.Scores{"violence": 0.1, "hate": 0, "spam": 0})},
		{"a score of 1e999 is invalid", nil, fake.WebhookScores(fake.Scores{"violence": fake.Literal("1e999"), "hate": 0})},
		{"a score of -1e-9 is invalid", nil, fake.WebhookScores(fake.Scores{"violence": -1e-9, "hate": 0})},
		{"a boolean score is invalid", nil, fake.WebhookScores(fake.Scores{"violence": true, "hate": 0})},
		{"a refusal of an unknown category is invalid", nil, fake.WebhookScores(fake.Scores{"violence": 0, "hate": 0}, "spam")},
		{"answers to a classifier with categories are invalid", nil,
			fake.Raw(`{"scores":{"violence":0,"hate":0},"answers":{"x":{"type":"refusal"}}}`)},
		{"scores to a classifier with questions are invalid", []spec{questions(boolean)},
			fake.Raw(`{"scores":{"onTopic":0.5},"answers":{"onTopic":{"type":"answer","probability":0.5}}}`)},
		{"a reply without answers is invalid", []spec{questions(boolean)}, fake.Raw(`{"scores":{}}`)},
		{"an answer that is not an object is invalid", []spec{questions(boolean)}, fake.WebhookAnswers(fake.Answers{"onTopic": 0.5})},
		{"a probability of NaN spelled as a string is invalid", []spec{questions(boolean)},
			fake.WebhookAnswers(fake.Answers{"onTopic": fake.AnswerProbability("NaN")})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewWebhook().Enqueue(tc.reply)
			srv := f.Start(t)
			_, err := classifyText(newClassifier(t, webhookSpec(srv.URL, tc.specs...)), "judged words")
			wantCode(t, err, classify.CodeInvalidAnswer, "judged words")
		})
	}
}

func TestWebhookCABundleIsTheOnlyTrust(t *testing.T) {
	f := fake.NewWebhook().Respond(func(fake.Request) fake.Reply {
		return fake.WebhookScores(fake.Scores{"violence": 0, "hate": 0})
	})
	cert, ca := selfSigned(t)
	srv := startTLS(t, f, &cert)

	trusted := webhookSpec(srv.URL)
	trusted.CABundle = ca
	if _, err := classifyText(newClassifier(t, trusted), "x"); err != nil {
		t.Fatalf("with the server's CA: %v", err)
	}

	_, err := classifyText(newClassifier(t, webhookSpec(srv.URL, token(secretToken))), "x")
	wantCode(t, err, classify.CodeClassifierFailed)

	other := startTLS(t, f, nil) // httptest's own certificate
	wrong := webhookSpec(other.URL)
	wrong.CABundle = ca
	_, err = classifyText(newClassifier(t, wrong), "x")
	wantCode(t, err, classify.CodeClassifierFailed)
	if f.Count() != 1 {
		t.Errorf("%d requests reached the webhook, want only the trusted one", f.Count())
	}
}

// selfSigned returns a certificate for 127.0.0.1 and its PEM, a CA bundle of one.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "webhook.test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// startTLS serves h over TLS on loopback with cert (httptest's own when nil), without
// logging the handshake failures the test provokes.
func startTLS(t *testing.T, h http.Handler, cert *tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cert != nil {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
