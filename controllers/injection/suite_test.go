package injection

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// The injector against the real apiserver: the webhook configuration of config/webhook,
// the apiserver calling the manager's webhook server over TLS with the certificate the
// manager made itself, and the caBundle the manager injected.

const operatorNamespace = "guardrail-system"

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	certDir   string
	probeAddr string
	cancel    context.CancelFunc
	testMgr   ctrl.Manager
)

func TestInjectionAgainstTheApiserver(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Injection suite (real kube-apiserver calling the webhook over TLS)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())

	var err error
	testEnv, err = envtestutil.New()
	Expect(err).NotTo(HaveOccurred())
	// envtest turns the ServiceAccount admission plugin off (nothing creates the "default"
	// ServiceAccounts); a cluster runs it, and it mounts the Kubernetes API token into
	// containers, the guard's included unless the guard already has a mount at its path.
	// On here, with the ServiceAccounts made by newNamespace and below.
	testEnv.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
	testEnv.WebhookInstallOptions = envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(envtestutil.RepoRoot(), "config", "webhook", "manifests.yaml")},
		// The apiserver reaches the webhook as https://localhost:<port>; the manager's own
		// certificate names localhost for it (Options.ExtraDNSNames).
		LocalServingHost:             "127.0.0.1",
		LocalServingHostExternalName: "localhost",
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The manager's certificate directory, not envtest's: the manager fills it.
	certDir, err = os.MkdirTemp("", "injection-certs-")
	Expect(err).NotTo(HaveOccurred())

	ctx := context.Background()
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
	for _, ns := range []string{operatorNamespace, "kube-system", "kube-public"} {
		createDefaultServiceAccount(ns)
	}
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CertSecretName, Namespace: operatorNamespace}})).To(Succeed())

	// The manager runs as its service account with the RBAC of config/rbac, as installed:
	// every request the injector and its certificate rotator make is authorized by it.
	managerCfg := operatorServiceAccountConfig()

	wo := testEnv.WebhookInstallOptions
	probeAddr = freeAddr()
	mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: certDir}),
	})
	Expect(err).NotTo(HaveOccurred())

	testMgr = mgr
	var mctx context.Context
	mctx, cancel = context.WithCancel(context.Background())
	Expect(Setup(mctx, mgr, Options{
		Config: Config{
			Image:             "guard:test",
			ProxyPort:         15080,
			AdminPort:         15090,
			OperatorNamespace: operatorNamespace,
			Version:           "v0.0.0-envtest",
			CPURequest:        resource.MustParse("100m"),
			MemoryRequest:     resource.MustParse("64Mi"),
			MemoryLimit:       resource.MustParse("256Mi"),
			OpenAIUpstream:    "https://api.openai.com",
			AnthropicUpstream: "https://api.anthropic.com",
			// On, so that every pod of the suite carries the OTEL_* variables through the
			// apiserver (the unit tests cover tracing off, the default).
			Tracing:         suiteTracing,
			PreviousTracing: []Tracing{suitePreviousTracing},
		},
		CertDir:          certDir,
		SelfManagedCerts: true,
		ExtraDNSNames:    []string{"localhost"},
		// NativeSidecars is left to the apiserver's version (1.37: native).
	})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	// Ready as the manager's /readyz would say: certificate in place, CA injected.
	Eventually(readyz).WithTimeout(60 * time.Second).Should(Succeed())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if certDir != "" {
		Expect(os.RemoveAll(certDir)).To(Succeed())
	}
})

// createDefaultServiceAccount does what the controller-manager does for every namespace.
func createDefaultServiceAccount(ns string) {
	Expect(k8sClient.Create(context.Background(), &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})).To(Succeed())
}

// freeAddr is a loopback address with a port nobody listens on.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(l.Close()).To(Succeed()) }()
	return l.Addr().String()
}

// readyz asks the manager's readiness endpoint, as the kubelet would.
func readyz() error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+probeAddr+"/readyz?verbose", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz %d: %s", resp.StatusCode, body)
	}
	return nil
}

// operatorServiceAccountConfig applies config/rbac and returns a client configuration that
// authenticates as the operator's service account.
func operatorServiceAccountConfig() *rest.Config {
	user, err := testEnv.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(certDir, "admin.kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-k", //nolint:gosec // test arguments
		filepath.Join(envtestutil.RepoRoot(), "config", "rbac")).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))

	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(context.Background(), "guardrail-operator",
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	sa := rest.AnonymousClientConfig(cfg)
	sa.BearerToken = tr.Status.Token
	// The apiserver authorizes it, and not for everything.
	saClient, err := kubernetes.NewForConfig(sa)
	Expect(err).NotTo(HaveOccurred())
	_, err = saClient.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "not-allowed-"}}, metav1.CreateOptions{})
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a namespace as the operator: %v", err)
	return sa
}

// suiteGuard is the guard the suite's injector renders (its Config, with the control
// plane's URL Setup defaults).
func suiteGuard() Guard {
	return Guard{Image: "guard:test", ProxyPort: 15080, AdminPort: 15090, ControlPlaneURL: DefaultControlPlaneURL(operatorNamespace),
		Tracing: []Tracing{suiteTracing.normalized(), suitePreviousTracing.normalized()}}
}

// The suite's tracing settings: the current one and an earlier one still accepted.
var (
	suiteTracing         = Tracing{Endpoint: "http://otel-collector.observability.svc:4318", SamplerArg: "0.5", ResourceAttributes: "k8s.cluster.name=envtest"}
	suitePreviousTracing = Tracing{Endpoint: "http://otel-old.observability.svc:4317", Protocol: "grpc"}
)
