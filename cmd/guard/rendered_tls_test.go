package main

import (
	"path"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// The TLS flags the operator renders for a SharedGuard's proxy with spec.tls are this
// command's, and name the Secret's tls.crt and tls.key where the pod mounts them. (The
// test links the operator's code; the command does not: runtime/linkcheck_test.go.)
func TestTheOperatorsTLSRenderingIsThisCommandsFlags(t *testing.T) {
	r := injection.NewRendererFor(injection.Config{
		Image: "registry.test/guardrail/operator:v1", Command: []string{"/guard"},
		ProxyPort: 15080, AdminPort: 15090, ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444",
		OpenAIUpstream: "https://api.openai.com", AnthropicUpstream: "https://api.anthropic.com",
	}, func() ([]byte, error) { return []byte("ca"), nil })
	tmpl, refused, err := r.SharedGuardPodWithTLS(map[string]string{"app": "chat"}, nil, "llm-guard-tls")
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedGuardPodWithTLS: %v, %v", err, refused)
	}
	c := tmpl.Spec.Containers[0]
	files := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if name == flagTLSCertFile || name == flagTLSKeyFile {
			files[name] = value
		}
	}
	mount := c.VolumeMounts[len(c.VolumeMounts)-1]
	vol := tmpl.Spec.Volumes[len(tmpl.Spec.Volumes)-1]
	if vol.Secret == nil || len(vol.Secret.Items) != 2 || mount.Name != vol.Name || !mount.ReadOnly ||
		files[flagTLSCertFile] != path.Join(mount.MountPath, vol.Secret.Items[0].Path) || vol.Secret.Items[0].Key != "tls.crt" ||
		files[flagTLSKeyFile] != path.Join(mount.MountPath, vol.Secret.Items[1].Path) || vol.Secret.Items[1].Key != "tls.key" {
		t.Errorf("the rendered TLS flags %v are not this command's, or not the mounted Secret's tls.crt and tls.key (%v, %v)", files, mount, vol)
	}
	// Without spec.tls the guard takes neither.
	plain, _, err := r.SharedGuardPod(map[string]string{"app": "chat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range plain.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--tls-") {
			t.Errorf("the cleartext guard takes %s", a)
		}
	}
}
