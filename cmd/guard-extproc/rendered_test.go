package main

import (
	"path"
	"reflect"
	"slices"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// The container the operator renders for a SharedGuard in ExtProc mode runs this command
// with flags it takes, and they make the control plane its policy source with the token
// and CA the pod's volumes hold, gRPC on the pod's address and the admin port the probes
// call. (The test links the operator's code; the command does not: runtime/linkcheck_test.go.)
func TestTheOperatorsRenderingIsThisCommandsFlags(t *testing.T) {
	r := injection.NewRendererFor(injection.Config{
		Image: "registry.test/guardrail/operator:v1", Command: []string{"/guard"}, ExtProcImage: "registry.test/guardrail/operator-extproc:v1",
		ProxyPort: 15080, AdminPort: 15090, ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444",
	}, func() ([]byte, error) { return []byte("ca"), nil })
	tmpl, refused, err := r.SharedExtProcPod(map[string]string{"app": "gateway"}, nil)
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedExtProcPod: %v, %v", err, refused)
	}
	c := tmpl.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/guard-extproc"}) {
		t.Fatalf("the operator runs %v, not this command as the Dockerfile's extproc image carries it", c.Command)
	}
	o, err := parseFlags(c.Args)
	if err != nil {
		t.Fatalf("the rendered arguments %q: %v", c.Args, err)
	}
	if err := o.policy.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.listen != ":15081" || o.admin != ":15090" || o.policy.File != "" || o.policy.ControlPlane != "https://guardrail-control-plane.guardrail-system.svc:9444" ||
		o.policy.TokenFile != guardv1.TokenPath || o.policy.CAFile != guardv1.CAPath || o.policy.SnapshotDir == "" ||
		o.tlsCert != "" || o.decisionLog != "" || o.podLabels != "" {
		t.Errorf("options %+v", o)
	}

	// With spec.tls: the same, plus the certificate and key files where the pod mounts the
	// Secret's tls.crt and tls.key.
	tmpl, refused, err = r.SharedExtProcPodWithTLS(map[string]string{"app": "gateway"}, nil, "llm-extproc-tls")
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedExtProcPodWithTLS: %v, %v", err, refused)
	}
	c = tmpl.Spec.Containers[0]
	withTLS, err := parseFlags(c.Args)
	if err != nil {
		t.Fatalf("the rendered arguments %q: %v", c.Args, err)
	}
	mount := c.VolumeMounts[len(c.VolumeMounts)-1]
	vol := tmpl.Spec.Volumes[len(tmpl.Spec.Volumes)-1]
	if withTLS.tlsCert != path.Join(mount.MountPath, vol.Secret.Items[0].Path) || withTLS.tlsKey != path.Join(mount.MountPath, vol.Secret.Items[1].Path) ||
		vol.Secret.Items[0].Key != "tls.crt" || vol.Secret.Items[1].Key != "tls.key" || mount.Name != vol.Name || !mount.ReadOnly {
		t.Errorf("the TLS files %q, %q are not the mounted Secret's tls.crt and tls.key (%v, %v)", withTLS.tlsCert, withTLS.tlsKey, mount, vol)
	}
	withTLS.tlsCert, withTLS.tlsKey = "", ""
	if !reflect.DeepEqual(withTLS, o) {
		t.Errorf("TLS changes more than the certificate files: %+v", withTLS)
	}
}
