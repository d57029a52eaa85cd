package incluster

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// extProcImage builds the Envoy external processor's image under the reference the chart
// gives the manager by default (sharedGuards.extProcImage empty:
// <image.repository>-extproc:<appVersion>), as make release names it.
func extProcImage(ctx context.Context, root string) (singlenode.Image, error) {
	ref, err := singlenode.OperatorImageRef(root)
	if err != nil {
		return singlenode.Image{}, err
	}
	repo, tag, _ := strings.Cut(ref[strings.LastIndexByte(ref, '/')+1:], ":")
	ref = ref[:strings.LastIndexByte(ref, '/')+1] + repo + "-extproc:" + tag
	return singlenode.GoImage(ctx, root, ref, map[string]string{"guard-extproc": "./cmd/guard-extproc"}, "guard-extproc")
}

// extProcPolicy blocks prompts naming a project, on Input: the processor answers such a
// request itself (ImmediateResponse 400), which shows that it enforces the policy the
// control plane gave it.
const extProcPolicy = `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: project-words}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: That project is not discussed here.
`

// TestAGatewayCallsAnExtProcSharedGuard runs docs/shared-guard.md's ExtProc mode as a user
// would: the chart installed (its default processor image, built and imported here),
// config/samples/shared/extproc-shared-guard.yaml applied. The processor's pods get their
// policy from the control plane and become Ready; the Service's EndpointSlice lists them
// on port grpc; the Guardrail counts them as enforcing; over gRPC (a port-forward to one
// pod, standing in for the gateway) the processor is SERVING and answers a prompt the
// Guardrail blocks with the guard's 400. A pod a tenant writes from the Deployment's
// template with one flag more never gets a policy, never becomes Ready, and is not listed.
func TestAGatewayCallsAnExtProcSharedGuard(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.LoadImages(ctx, extProcImage); err != nil {
		t.Fatal(err)
	}
	const ns = "gateway-a"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
	mustApply(t, u, strings.ReplaceAll(extProcPolicy, "metadata: {name:", "metadata: {namespace: "+ns+", name:"))
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrail/project-words", "--timeout=1m")

	sample, err := os.ReadFile(filepath.Join(c.Root, "config", "samples", "shared", "extproc-shared-guard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustApply(t, u, strings.Replace(string(sample), "namespace: team-a", "namespace: "+ns, 1))
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "sharedguard/llm-extproc", "--timeout=3m")
	t.Logf("ExtProc SharedGuard Ready in %s", time.Since(start).Round(time.Millisecond))
	if got := u.kubectl("-n", ns, "get", "sharedguard", "llm-extproc", "-o", "jsonpath={.status.readyReplicas} {.status.url}"); got != "2 http://llm-extproc."+ns+".svc:15081" {
		t.Fatalf("status: %q", got)
	}
	if got := u.kubectl("-n", ns, "get", "endpointslice", "llm-extproc-ipv4", "-o",
		"jsonpath={.ports[0].name} {.ports[0].port} {.ports[0].appProtocol} {.endpoints[*].conditions.ready}"); got != "grpc 15081 kubernetes.io/h2c true true" {
		t.Fatalf("EndpointSlice: %q", got)
	}

	t.Run("the Guardrail counts the processor's pods as enforcing", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, func(s string) bool { return s == "2/2" },
			"-n", ns, "get", "guardrail", "project-words", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
	})

	t.Run("the processor serves gRPC and blocks what the Guardrail blocks", func(t *testing.T) {
		u := user{t: t, c: c}
		pod := strings.Fields(u.kubectl("-n", ns, "get", "pods", "-l", "guardrail.dev/shared-guard=llm-extproc", "-o", "jsonpath={.items[*].metadata.name}"))[0]
		conn, err := grpc.NewClient(portForward(t, u, ns, pod, 15081), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health: %v %v", resp, err)
		}
		stream, err := extprocv3.NewExternalProcessorClient(conn).Process(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		hv := func(k, v string) *corev3.HeaderValue { return &corev3.HeaderValue{Key: k, RawValue: []byte(v)} }
		for _, req := range []*extprocv3.ProcessingRequest{
			{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
				Headers: []*corev3.HeaderValue{hv(":method", "POST"), hv(":path", "/v1/chat/completions"), hv("content-type", "application/json")}}}}},
			{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
				Body: []byte(`{"model":"m","messages":[{"role":"user","content":"Tell me about bluebird"}]}`), EndOfStream: true}}},
		} {
			if err := stream.Send(req); err != nil {
				t.Fatal(err)
			}
			resp, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ir := resp.GetImmediateResponse(); ir != nil {
				if ir.GetStatus().GetCode() != 400 || !strings.Contains(string(ir.GetBody()), "content_policy_violation") {
					t.Fatalf("immediate response %d %s", ir.GetStatus().GetCode(), ir.GetBody())
				}
				return
			}
		}
		t.Fatal("the blocked prompt was not answered with an ImmediateResponse")
	})

	t.Run("a tenant's pod written like the processor with one flag more is refused", func(t *testing.T) {
		u := user{t: t, c: c}
		var dep appsv1.Deployment
		if err := json.Unmarshal([]byte(u.kubectl("-n", ns, "get", "deployment", "llm-extproc", "-o", "json")), &dep); err != nil {
			t.Fatal(err)
		}
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: dep.Spec.Template.ObjectMeta, Spec: dep.Spec.Template.Spec}
		pod.Name, pod.Namespace = "mimic", ns
		pod.Spec.Containers[0].Args = append(pod.Spec.Containers[0].Args, "--decision-log=-")
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, u, string(b))
		u.eventually(2*time.Minute, func(s string) bool { return s == "Running" }, "-n", ns, "get", "pod", "mimic", "-o", "jsonpath={.status.phase}")
		time.Sleep(15 * time.Second) // time to subscribe, be refused, and fail its probes
		if ready := u.kubectl("-n", ns, "get", "pod", "mimic", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); ready == "True" {
			t.Errorf("the mimic is Ready: it got a policy")
		}
		ip := u.kubectl("-n", ns, "get", "pod", "mimic", "-o", "jsonpath={.status.podIP}")
		eps := u.kubectl("-n", ns, "get", "endpointslice", "llm-extproc-ipv4", "-o", "jsonpath={.endpoints[*].addresses[0]}")
		if ip == "" || strings.Contains(" "+eps+" ", " "+ip+" ") || len(strings.Fields(eps)) != 2 {
			t.Errorf("the Service's endpoints %q; the mimic is at %s", eps, ip)
		}
		if logs, _ := u.run("kubectl", "-n", ns, "logs", "mimic"); !strings.Contains(logs, "403") && !strings.Contains(logs, "not_a_guard") {
			t.Logf("the mimic's log does not show the refusal:\n%s", logs)
		}
	})
}

// portForward forwards a local port to port of pod until the test ends, and returns the
// local address.
func portForward(t *testing.T, u user, ns, pod string, port int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "kubectl", "-n", ns, "port-forward", "pod/"+pod, ":"+strconv.Itoa(port)) //nolint:gosec // the test's own arguments
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.c.Kubeconfig())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	forwarding := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			go func() {
				for lines.Scan() { // keep draining
				}
			}()
			return m[1]
		}
	}
	t.Fatal("kubectl port-forward printed no local address")
	return ""
}
