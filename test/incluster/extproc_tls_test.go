package incluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload/tlstest"
)

// tlsIssuer is a self-signed CA standing in for a cert-manager issuer.
type tlsIssuer struct {
	*tlstest.CA
	pool *x509.CertPool
}

func newTLSIssuer(t *testing.T) *tlsIssuer {
	t.Helper()
	ca := tlstest.NewCA(t, "incluster test CA")
	return &tlsIssuer{CA: ca, pool: ca.Pool}
}

// secret is a kubernetes.io/tls Secret named name holding a certificate for host with
// serial number serial, as cert-manager writes one.
func (ca *tlsIssuer) secret(t *testing.T, ns, name, host string, serial int64) string {
	t.Helper()
	crt, key := ca.Issue(t, serial, host, host+".cluster.local")
	return "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata: {namespace: " + ns + ", name: " + name + "}\ndata:\n" +
		"  tls.crt: " + base64.StdEncoding.EncodeToString(crt) + "\n  tls.key: " + base64.StdEncoding.EncodeToString(key) + "\n"
}

// TestAGatewayCallsAnExtProcSharedGuardOverTLS is TestAGatewayCallsAnExtProcSharedGuard
// with spec.tls: the SharedGuard applied before its Secret waits for it
// (TLSSecretNotFound); once the Secret exists its pods become Ready, status.url is https
// and the EndpointSlice advertises https. Over a port-forward (standing in for the
// gateway) a client trusting the CA is served by the processor, a cleartext client is not;
// the Secret renewed in place reaches new connections without a pod restart.
func TestAGatewayCallsAnExtProcSharedGuardOverTLS(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.LoadImages(ctx, extProcImage); err != nil {
		t.Fatal(err)
	}
	const ns = "gateway-tls"
	host := "llm-extproc." + ns + ".svc"
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
	sg := strings.Replace(string(sample), "namespace: team-a", "namespace: "+ns, 1)
	sg = strings.Replace(sg, "  mode: ExtProc\n", "  mode: ExtProc\n  tls: {secretName: llm-extproc-tls}\n", 1)
	if !strings.Contains(sg, "tls: {secretName: llm-extproc-tls}") {
		t.Fatalf("the sample has no line '  mode: ExtProc' to add spec.tls after:\n%s", sample)
	}
	mustApply(t, u, sg)
	u.eventually(time.Minute, func(s string) bool { return s == "TLSSecretNotFound" },
		"-n", ns, "get", "sharedguard", "llm-extproc", "-o", `jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}`)

	ca := newTLSIssuer(t)
	mustApply(t, u, ca.secret(t, ns, "llm-extproc-tls", host, 1001))
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "sharedguard/llm-extproc", "--timeout=3m")
	if got := u.kubectl("-n", ns, "get", "sharedguard", "llm-extproc", "-o", "jsonpath={.status.readyReplicas} {.status.url}"); got != "2 https://"+host+":15081" {
		t.Fatalf("status: %q", got)
	}
	if got := u.kubectl("-n", ns, "get", "endpointslice", "llm-extproc-ipv4", "-o",
		"jsonpath={.ports[0].name} {.ports[0].port} {.ports[0].appProtocol} {.endpoints[*].conditions.ready}"); got != "grpc 15081 https true true" {
		t.Fatalf("EndpointSlice: %q", got)
	}
	pods := strings.Fields(u.kubectl("-n", ns, "get", "pods", "-l", "guardrail.dev/shared-guard=llm-extproc", "-o", "jsonpath={.items[*].metadata.name}"))
	addr := portForward(t, u, ns, pods[0], 15081)

	// served calls the health service on a new connection and returns the serial number of
	// the certificate the processor presented.
	served := func(creds credentials.TransportCredentials) (int64, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return 0, err
		}
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var p peer.Peer
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
		if err != nil {
			return 0, err
		}
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %v over %T", resp, p.AuthInfo)
		}
		return info.State.PeerCertificates[0].SerialNumber.Int64(), nil
	}
	trusting := credentials.NewTLS(&tls.Config{RootCAs: ca.pool, ServerName: host, MinVersion: tls.VersionTLS12})
	if serial, err := served(trusting); err != nil || serial != 1001 {
		t.Fatalf("a client trusting the CA: certificate %d, %v", serial, err)
	}
	if _, err := served(insecure.NewCredentials()); err == nil {
		t.Error("a cleartext client was served")
	}

	// Renewed in place, as cert-manager does: the kubelet updates the files, and new
	// connections get the new certificate from the same pod.
	mustApply(t, u, ca.secret(t, ns, "llm-extproc-tls", host, 1002))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		serial, err := served(trusting)
		if err == nil && serial == 1002 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate was not presented within 3 minutes: %d, %v", serial, err)
		}
		time.Sleep(5 * time.Second)
	}
	if restarts := u.kubectl("-n", ns, "get", "pod", pods[0], "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); restarts != "0" {
		t.Errorf("the processor restarted %s times", restarts)
	}
	if logs, _ := u.run("kubectl", "-n", ns, "logs", pods[0]); strings.Contains(logs, "PRIVATE KEY") || !strings.Contains(logs, "Reloaded the TLS certificate") {
		t.Errorf("the processor's log does not show the reload, or shows a key:\n%s", logs)
	}
}
