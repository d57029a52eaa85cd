package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// keylessValues turns the keyless egress policy on for two namespaces, with IPv4 and IPv6
// provider ranges on two ports and the control plane on a port of its own.
const keylessValues = `
controlPlane: {port: 9555}
keylessEgress:
  namespaces: [team-a, team-b]
  providerCIDRs: [162.159.140.0/24, "2606:4700::/32"]
  providerPorts: [443, 8443]
`

// keylessPolicies returns the keyless egress NetworkPolicies of a render, by namespace.
func keylessPolicies(t *testing.T, render string) map[string]*networkingv1.NetworkPolicy {
	t.Helper()
	out := map[string]*networkingv1.NetworkPolicy{}
	for _, o := range objects(t, render) {
		if o["kind"] != "NetworkPolicy" || o["metadata"].(map[string]any)["name"] != "guardrail-keyless-egress" {
			continue
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		np := &networkingv1.NetworkPolicy{}
		if err := yaml.UnmarshalStrict(b, np); err != nil {
			t.Fatal(err)
		}
		out[np.Namespace] = np
	}
	return out
}

// TestKeylessEgressLimitsAppPodsToDNSTheControlPlaneTheClusterAndTheProviders: each
// keyless namespace gets one egress policy for all its pods; every rule names where it
// goes (a rule without `to` would allow every address); the control plane is the
// release's, on its port; the providers' ranges are the only addresses outside the
// cluster; allowInCluster=false leaves only pods the policy names.
func TestKeylessEgressLimitsAppPodsToDNSTheControlPlaneTheClusterAndTheProviders(t *testing.T) {
	if got := keylessPolicies(t, render(t)); len(got) != 0 {
		t.Fatalf("the default render has keyless egress policies in %v", got)
	}
	policies := keylessPolicies(t, renderYAML(t, "ops-guardrails", keylessValues))
	if len(policies) != 2 || policies["team-a"] == nil || policies["team-b"] == nil {
		t.Fatalf("policies in %v, want team-a and team-b", policies)
	}
	for ns, np := range policies {
		if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) != 0 {
			t.Errorf("%s: the policy selects %v, not every pod", ns, np.Spec.PodSelector)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
			t.Errorf("%s: policyTypes %v", ns, np.Spec.PolicyTypes)
		}
		var dns, controlPlane, inCluster bool
		var cidrs []string
		for _, r := range np.Spec.Egress {
			if len(r.To) == 0 {
				t.Errorf("%s: a rule without `to` allows every address: %v", ns, r)
			}
			ports := rulePorts(r)
			for _, peer := range r.To {
				switch {
				case peer.IPBlock != nil:
					cidrs = append(cidrs, peer.IPBlock.CIDR)
					if len(peer.IPBlock.Except) != 0 || !slices.Equal(ports, []int32{443, 8443}) {
						t.Errorf("%s: provider range %v on ports %v", ns, peer.IPBlock, ports)
					}
				case peer.PodSelector != nil && peer.PodSelector.MatchLabels["k8s-app"] == "kube-dns":
					dns = slices.Equal(ports, []int32{53, 53})
				case peer.PodSelector != nil && peer.PodSelector.MatchLabels["app.kubernetes.io/name"] == "guardrail-operator":
					controlPlane = slices.Equal(ports, []int32{9555}) && peer.NamespaceSelector != nil &&
						peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "ops-guardrails"
				case peer.PodSelector == nil && peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0:
					inCluster = len(ports) == 0
				default:
					t.Errorf("%s: an egress peer the recipe does not have: %v", ns, peer)
				}
			}
		}
		if !dns || !controlPlane || !inCluster {
			t.Errorf("%s: DNS %v, the release's control plane on its port %v, in-cluster pods %v", ns, dns, controlPlane, inCluster)
		}
		if !slices.Equal(cidrs, []string{"162.159.140.0/24", "2606:4700::/32"}) {
			t.Errorf("%s: addresses outside the cluster %v, want the providers' only", ns, cidrs)
		}
	}

	for ns, np := range keylessPolicies(t, renderYAML(t, "guardrail-system", keylessValues+"  allowInCluster: false\n")) {
		for _, r := range np.Spec.Egress {
			for _, peer := range r.To {
				if peer.IPBlock == nil && peer.PodSelector == nil {
					t.Errorf("%s: allowInCluster=false still allows every pod of %v", ns, peer.NamespaceSelector)
				}
			}
		}
	}
}

// rulePorts are a rule's port numbers, in order.
func rulePorts(r networkingv1.NetworkPolicyEgressRule) []int32 {
	var out []int32
	for _, p := range r.Ports {
		out = append(out, p.Port.IntVal)
	}
	return out
}

// TestTheDocumentedKeylessRecipeIsTheChartsRender: the NetworkPolicy written out in
// docs/keyless-apps.md is what keylessEgress renders for its namespace (the release's
// instance label aside), so the recipe and the option cannot drift.
func TestTheDocumentedKeylessRecipeIsTheChartsRender(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "docs", "keyless-apps.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented *networkingv1.NetworkPolicy
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, "kind: NetworkPolicy") {
			continue
		}
		documented = &networkingv1.NetworkPolicy{}
		if err := yaml.UnmarshalStrict([]byte(block), documented); err != nil {
			t.Fatalf("the documented recipe: %v", err)
		}
	}
	if documented == nil {
		t.Fatal("docs/keyless-apps.md writes out no NetworkPolicy")
	}
	rendered := keylessPolicies(t, renderYAML(t, "guardrail-system",
		"keylessEgress: {namespaces: [shop], providerCIDRs: [162.159.140.0/24]}"))["shop"]
	if rendered == nil {
		t.Fatal("no policy rendered for shop")
	}
	for _, r := range rendered.Spec.Egress {
		for _, p := range r.To {
			if p.PodSelector != nil {
				delete(p.PodSelector.MatchLabels, "app.kubernetes.io/instance")
			}
		}
	}
	if documented.Name != rendered.Name || documented.Namespace != rendered.Namespace || !equality.Semantic.DeepEqual(documented.Spec, rendered.Spec) {
		t.Errorf("the documented recipe is not the chart's render:\n%s", cmp.Diff(rendered.Spec, documented.Spec))
	}
}
