package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/internal/serving"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// The manager's own wiring, against the real control plane: how it serves metrics, and
// that it works under the scoped RBAC of config/scoped.

var (
	env        *envtest.Environment
	cfg        *rest.Config
	kubeconfig string
)

func TestMain(m *testing.M) {
	if os.Getenv(runManagerEnv) != "" {
		// The test binary re-executed as the manager (startManager).
		main()
		return
	}
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var err error
	if env, err = envtestutil.New(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer func() { _ = env.Stop() }()
		dir, err := os.MkdirTemp("", "manager-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
		if err == nil {
			var kc []byte
			if kc, err = user.KubeConfig(); err == nil {
				kubeconfig = filepath.Join(dir, "kubeconfig")
				err = os.WriteFile(kubeconfig, kc, 0o600)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func TestMetricsAreServedOnlyToAuthorizedClients(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddress(t)
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	must(t, err)
	must(t, serving.Metrics(mgr, metricsConfig{bindAddress: addr, secure: true}.options(), serving.MetricsTimeouts))
	go func() { _ = mgr.Start(ctx) }()

	cs := kubernetes.NewForConfigOrDie(cfg)
	must(t, applyFile(ctx, cs, filepath.Join(envtestutil.RepoRoot(), "config", "rbac", "metrics_reader_role.yaml")))
	allowed, denied := serviceAccountToken(t, cs, "prometheus"), serviceAccountToken(t, cs, "nosy")
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "guardrail-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}},
	}, metav1.CreateOptions{})
	must(t, err)

	scrape := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		must(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The certificate is self-signed when no --metrics-cert-dir is given.
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test certificate
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "the metrics endpoint to serve", func() bool { code, _ := scrape(""); return code != 0 })

	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"an anonymous client is refused", "", http.StatusUnauthorized},
		{"an authenticated client without get on /metrics is forbidden", denied, http.StatusForbidden},
		{"a client bound to guardrail-operator-metrics-reader gets the metrics", allowed, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := scrape(tc.token)
			if code != tc.want {
				t.Fatalf("GET /metrics = %d %q, want %d", code, truncate(body), tc.want)
			}
			if tc.want == http.StatusOK && !strings.Contains(body, "controller_runtime_") {
				t.Errorf("the body holds no controller-runtime metrics: %q", truncate(body))
			}
		})
	}

	t.Run("plain HTTP is refused", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		must(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("plain HTTP answered %d", resp.StatusCode)
			}
		}
	})
}

func TestMetricsLoopbackCheck(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "0": true,
		":8080": false, "0.0.0.0:8080": false, "10.0.0.1:8080": false,
	} {
		if got := (metricsConfig{bindAddress: addr}).loopback(); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestScopedRBAC installs config/scoped as kubectl would and runs the manager as its
// service account, watching team-a and team-b: it resolves a Classifier's Secret there,
// and can read no Secret elsewhere. config/default then grants Secrets cluster-wide.
func TestScopedRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must(t, err)
	}
	kubectlApplyKustomization(t, "scoped")

	const sa = "system:serviceaccount:guardrail-system:guardrail-operator"
	canI := func(ns string) string {
		out, _ := exec.Command("kubectl", "--kubeconfig", kubeconfig, "auth", "can-i", "get", "secrets", "-n", ns, "--as", sa).CombinedOutput() //nolint:gosec // test arguments
		return strings.TrimSpace(string(out))
	}
	for ns, want := range map[string]string{"team-a": "yes", "team-b": "yes", "team-c": "no", "kube-system": "no", "guardrail-system": "yes"} {
		if got := canI(ns); got != want {
			t.Errorf("scoped: can the manager get secrets in %s? %q, want %q", ns, got, want)
		}
	}

	// The manager as its service account, with the flags of config/scoped.
	saCfg := rest.CopyConfig(cfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:guardrail-system", "system:authenticated"}}
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(saCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions("team-a, team-b"),
	})
	must(t, err)
	must(t, controllers.Setup(ctx, mgr))
	go func() { _ = mgr.Start(ctx) }()

	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	must(t, err)
	for _, ns := range []string{"team-a", "team-c"} {
		must(t, admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"},
			Data: map[string][]byte{"apiKey": []byte("t")}}))
		must(t, admin.Create(ctx, &v1alpha1.Classifier{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"},
			Spec: v1alpha1.ClassifierSpec{
				Webhook:              &v1alpha1.WebhookBackend{URL: "https://judge.example.com"},
				Categories:           []v1alpha1.Category{{ID: "x"}},
				CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"},
			},
		}))
	}
	ready := func(ns string) func() bool {
		return func() bool {
			c := &v1alpha1.Classifier{}
			if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "judge"}, c) != nil {
				return false
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue {
					return true
				}
			}
			return false
		}
	}
	waitFor(t, "the Classifier of watched team-a to be Ready with its Secret", ready("team-a"))
	// A ModelProvider's credential lives in the operator's namespace, which is not in the
	// list: the manager still reads it, and sees it change.
	must(t, admin.Create(ctx, &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: "scoped"},
		Spec: v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIOpenAI, URL: "https://llm.example.com/v1",
			CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: "scoped-provider", Key: "apiKey"},
			NamespaceSelector:    &v1alpha1.LabelSelector{}}}))
	providerReady := func(want metav1.ConditionStatus) func() bool {
		return func() bool {
			p := &v1alpha1.ModelProvider{}
			if admin.Get(ctx, client.ObjectKey{Name: "scoped"}, p) != nil {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == v1alpha1.ConditionReady {
					return cond.Status == want
				}
			}
			return false
		}
	}
	waitFor(t, "the ModelProvider to wait for its Secret", providerReady(metav1.ConditionFalse))
	must(t, admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "guardrail-system", Name: "scoped-provider"},
		Data: map[string][]byte{"apiKey": []byte("t")}}))
	waitFor(t, "the ModelProvider to be Ready once its Secret in the unwatched operator namespace exists", providerReady(metav1.ConditionTrue))
	c := &v1alpha1.Classifier{}
	must(t, admin.Get(ctx, client.ObjectKey{Namespace: "team-c", Name: "judge"}, c))
	if len(c.Status.Conditions) != 0 {
		t.Errorf("the Classifier of unwatched team-c has a status: %+v", c.Status.Conditions)
	}

	kubectlApplyKustomization(t, "default")
	if got := canI("kube-system"); got != "yes" {
		t.Errorf("default: can the manager get secrets in kube-system? %q, want yes (cluster-wide by default)", got)
	}
}

func kubectlApplyKustomization(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-k", //nolint:gosec // test arguments
		filepath.Join(envtestutil.RepoRoot(), "config", dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/%s: %v\n%s", dir, err, out)
	}
}

// serviceAccountToken creates a service account in default and returns a token of it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(t, err)
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// applyFile creates the ClusterRole of a one-document RBAC manifest.
func applyFile(ctx context.Context, cs kubernetes.Interface, path string) error {
	b, err := os.ReadFile(path) //nolint:gosec // a file of the repository
	if err != nil {
		return err
	}
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return err
	}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, obj.(*rbacv1.ClusterRole), metav1.CreateOptions{})
	return err
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
