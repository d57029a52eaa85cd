package classifier_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// The admission policies of config/admission (the chart renders the same ones) against
// the real apiserver, for users who are not cluster admins: a tenant ServiceAccount that
// may write Classifiers, Guardrails and service-account tokens in its namespace, and may
// or may not read a Secret.

const policiesFile = "config/admission/policies.yaml"

// warnings collects the apiserver's warnings to one client.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

type admissionEnv struct {
	admin client.Client
	cfg   *rest.Config
	ns    string
}

// as returns clients acting as user: a controller-runtime client whose warnings are
// collected, and a clientset for TokenRequests.
func (e *admissionEnv) as(t *testing.T, user string, groups ...string) (client.Client, *kubernetes.Clientset, *warnings) {
	t.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	w := &warnings{}
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: e.admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubernetes.NewForConfigOrDie(cfg), w
}

func startAdmission(t *testing.T) *admissionEnv {
	t.Helper()
	_, cfg := envtestutil.Start(t)
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	must(t, err)
	e := &admissionEnv{admin: admin, cfg: cfg, ns: "team-a"}
	ctx := context.Background()
	must(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}))

	// The policies as shipped: read from config/admission, not copied here.
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), policiesFile))
	must(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
	var policies []string
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		must(t, admin.Create(ctx, u))
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			policies = append(policies, u.GetName())
		}
	}
	if len(policies) != 4 {
		t.Fatalf("%s holds policies %v; want the four this test covers", policiesFile, policies)
	}
	// The tenant: Classifiers, Guardrails, SharedGuards and tokens of its namespace; no
	// Secrets.
	must(t, admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "tenant"}}))
	must(t, admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "app"}}))
	must(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"classifiers", "guardrails", "sharedguards"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	}}))
	must(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "tenant"}}}))
	for _, name := range []string{"db-password", "judge-token"} {
		must(t, admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			StringData: map[string]string{"apiKey": "s3cret"}}))
	}
	// Another service's TLS identity, and the one the tenant's guard is meant to serve.
	for _, name := range []string{"payments-tls", "guard-tls"} {
		must(t, admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Type: corev1.SecretTypeTLS,
			StringData: map[string]string{corev1.TLSCertKey: "not read here", corev1.TLSPrivateKeyKey: "not read here"}}))
	}
	return e
}

func (e *admissionEnv) tenant(t *testing.T) (client.Client, *kubernetes.Clientset, *warnings) {
	t.Helper()
	return e.as(t, "system:serviceaccount:"+e.ns+":tenant", "system:serviceaccounts", "system:serviceaccounts:"+e.ns)
}

func credentialed(ns, name, secret, url string) *v1alpha1.Classifier {
	c := &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ClassifierSpec{
			Webhook:    &v1alpha1.WebhookBackend{URL: url},
			Categories: []v1alpha1.Category{{ID: "fraud"}},
		},
	}
	if secret != "" {
		c.Spec.CredentialsSecretRef = &v1alpha1.SecretKeyReference{Name: secret, Key: "apiKey"}
	}
	return c
}

func TestAdmissionPolicies(t *testing.T) {
	e := startAdmission(t)
	ctx := context.Background()
	tenant, tenantCS, tenantWarnings := e.tenant(t)

	t.Run("a tenant that may not get a Secret cannot name it in a Classifier", func(t *testing.T) {
		// The reproduction of issue 28: the tenant's own listener, the database password.
		c := credentialed(e.ns, "exfiltrate", "db-password", "https://listener.tenant.example/")
		var err error
		eventually(t, "the policy refuses", func() error {
			err = tenant.Create(ctx, c.DeepCopy())
			if err == nil {
				_ = e.admin.Delete(ctx, c) // the policy was not in effect yet
				return errors.New("created")
			}
			return nil
		})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("err = %v, want Forbidden", err)
		}
		t.Log(err)
		for _, want := range []string{"spec.credentialsSecretRef.name", "system:serviceaccount:team-a:tenant may not get Secret db-password in namespace team-a", "bearer token"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	})

	t.Run("a tenant that may not get a Secret can still write a Classifier without credentials", func(t *testing.T) {
		must(t, tenant.Create(ctx, credentialed(e.ns, "open", "", "https://judge.example.com/")))
	})

	t.Run("a tenant that may get the Secret may name it", func(t *testing.T) {
		must(t, e.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "judge-token-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"judge-token"}, Verbs: []string{"get"}}}}))
		must(t, e.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "judge-token-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "judge-token-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "tenant"}}}))
		eventually(t, "the tenant may name judge-token", func() error {
			return tenant.Create(ctx, credentialed(e.ns, "judge", "judge-token", "https://judge.example.com/"))
		})
		// The grant is for judge-token only.
		if err := tenant.Create(ctx, credentialed(e.ns, "judge-2", "db-password", "https://judge.example.com/")); !apierrors.IsForbidden(err) {
			t.Errorf("naming db-password with a grant on judge-token only: err = %v, want Forbidden", err)
		}
	})

	t.Run("a tenant cannot re-point an admin's credentialed Classifier, but may label it", func(t *testing.T) {
		c := credentialed(e.ns, "moderation", "db-password", "https://moderation.example.com/")
		must(t, e.admin.Create(ctx, c))
		mine := &v1alpha1.Classifier{}
		must(t, tenant.Get(ctx, client.ObjectKeyFromObject(c), mine))
		repointed := mine.DeepCopy()
		repointed.Spec.Webhook.URL = "https://listener.tenant.example/"
		err := tenant.Update(ctx, repointed)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not get Secret db-password") {
			t.Fatalf("re-pointing the URL: err = %v, want Forbidden naming the Secret", err)
		}
		recategorized := mine.DeepCopy()
		recategorized.Spec.Categories = append(recategorized.Spec.Categories, v1alpha1.Category{ID: "spam"})
		if err := tenant.Update(ctx, recategorized); !apierrors.IsForbidden(err) {
			t.Errorf("changing another field of the spec: err = %v, want Forbidden", err)
		}
		labelled := mine.DeepCopy()
		labelled.Labels = map[string]string{"team": "a"}
		must(t, tenant.Update(ctx, labelled))
		// Dropping the credential lifts the check: the Secret no longer goes anywhere.
		dropped := labelled.DeepCopy()
		dropped.Spec.CredentialsSecretRef = nil
		dropped.Spec.Webhook.URL = "https://listener.tenant.example/"
		must(t, tenant.Update(ctx, dropped))
	})

	sharedGuard := func(name, secret string) *v1alpha1.SharedGuard {
		sg := &v1alpha1.SharedGuard{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
		if secret != "" {
			sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: secret}
		}
		return sg
	}

	t.Run("a tenant that may not get a TLS Secret cannot have a SharedGuard serve its key", func(t *testing.T) {
		// The guard's pods would mount payments-tls and present the payments service's
		// identity from a Service of the tenant's.
		sg := sharedGuard("impersonate", "payments-tls")
		var err error
		eventually(t, "the policy refuses", func() error {
			err = tenant.Create(ctx, sg.DeepCopy())
			if err == nil {
				_ = e.admin.Delete(ctx, sg) // the policy was not in effect yet
				return errors.New("created")
			}
			return nil
		})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("err = %v, want Forbidden", err)
		}
		t.Log(err)
		for _, want := range []string{"spec.tls.secretName", "system:serviceaccount:team-a:tenant may not get Secret payments-tls in namespace team-a", "serve TLS with its key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
		// A cleartext SharedGuard names no Secret.
		must(t, tenant.Create(ctx, sharedGuard("cleartext", "")))
	})

	t.Run("a tenant that may get a TLS Secret may have its SharedGuard serve it, and only that one", func(t *testing.T) {
		must(t, e.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "guard-tls-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"guard-tls"}, Verbs: []string{"get"}}}}))
		must(t, e.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "guard-tls-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "guard-tls-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "tenant"}}}))
		eventually(t, "the tenant may name guard-tls", func() error {
			return tenant.Create(ctx, sharedGuard("llm", "guard-tls"))
		})
		mine := &v1alpha1.SharedGuard{}
		must(t, tenant.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "llm"}, mine))
		moved := mine.DeepCopy()
		moved.Spec.TLS.SecretName = "payments-tls"
		if err := tenant.Update(ctx, moved); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not get Secret payments-tls") {
			t.Errorf("moving its SharedGuard to payments-tls: err = %v, want Forbidden naming the Secret", err)
		}
	})

	t.Run("a tenant may change an admin's TLS SharedGuard but not the Secret it serves", func(t *testing.T) {
		sg := sharedGuard("gateway", "payments-tls")
		must(t, e.admin.Create(ctx, sg))
		mine := &v1alpha1.SharedGuard{}
		must(t, tenant.Get(ctx, client.ObjectKeyFromObject(sg), mine))
		scaled := mine.DeepCopy()
		three := int32(3)
		scaled.Spec.Replicas = &three
		must(t, tenant.Update(ctx, scaled)) // the same key is served as before
		must(t, tenant.Get(ctx, client.ObjectKeyFromObject(sg), mine))
		renamed := mine.DeepCopy()
		renamed.Spec.TLS.SecretName = "db-password"
		if err := tenant.Update(ctx, renamed); !apierrors.IsForbidden(err) {
			t.Errorf("pointing it at db-password: err = %v, want Forbidden", err)
		}
	})

	tokenFor := func(cs *kubernetes.Clientset, audience string) error {
		exp := int64(600)
		_, err := cs.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, "app", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &exp},
		}, metav1.CreateOptions{})
		return err
	}

	t.Run("a tenant cannot mint a token for the control plane's audience", func(t *testing.T) {
		var err error
		eventually(t, "the policy refuses", func() error {
			if err = tokenFor(tenantCS, guardv1.Audience); err == nil {
				return errors.New("a token was issued")
			}
			return nil
		})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("err = %v, want Forbidden", err)
		}
		t.Log(err)
		for _, want := range []string{"spec.audiences", "only a node", "guardrail.dev", "system:serviceaccount:team-a:tenant is not a node"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	})

	t.Run("a tenant may mint a token for another audience", func(t *testing.T) {
		must(t, tokenFor(tenantCS, "vault"))
		must(t, tokenFor(tenantCS, "guardrail.dev.example"))
	})

	t.Run("a node may mint a token for the control plane's audience, as the kubelet does", func(t *testing.T) {
		// envtest authorizes with RBAC only (no Node authorizer): grant what the Node
		// authorizer would.
		must(t, e.admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-node-tokens"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}}}}))
		must(t, e.admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-node-tokens"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test-node-tokens"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:node:impostor"}}}))
		_, node, _ := e.as(t, "system:node:node-1", "system:nodes")
		eventually(t, "the node is issued a token", func() error { return tokenFor(node, guardv1.Audience) })
		// The node's name without its group is not a node.
		_, impostor, _ := e.as(t, "system:node:impostor")
		if err := tokenFor(impostor, guardv1.Audience); !apierrors.IsForbidden(err) {
			t.Errorf("a user named like a node but outside system:nodes: err = %v, want Forbidden", err)
		}
	})

	t.Run("plain http to a host outside the cluster is admitted with a warning", func(t *testing.T) {
		tenantWarnings.take()
		must(t, tenant.Create(ctx, credentialed(e.ns, "plain", "", "http://judge.example.com/classify")))
		got := strings.Join(tenantWarnings.take(), "\n")
		t.Log(got)
		for _, want := range []string{"spec.webhook.url: plain http to judge.example.com", "use https"} {
			if !strings.Contains(got, want) {
				t.Errorf("warnings %q do not say %q", got, want)
			}
		}
		for i, url := range []string{"http://judge:8080/", "http://judge.ml.svc:8080/", "http://judge.ml.svc.cluster.local/", "https://judge.example.com/"} {
			must(t, tenant.Create(ctx, credentialed(e.ns, fmt.Sprintf("quiet-%d", i), "", url)))
			if w := tenantWarnings.take(); len(w) > 0 {
				t.Errorf("%s: unexpected warnings %q", url, w)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually retries f for up to 30s (policies and RBAC reach the apiserver's admission
// and authorization through informers).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
