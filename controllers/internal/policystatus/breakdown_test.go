package policystatus

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// At 1,000 namespaces the breakdown stays at 20 entries and one sum, no decision is lost
// or counted twice, and a namespace whose pods do not enforce is listed.
func TestBreakdownStaysBoundedAndExact(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		st := &v1alpha1.ClusterGuardrailStatus{}
		var counted int64
		perNS := map[string]v1alpha1.NamespaceFigures{}
		for i := range 1000 {
			perNS[fmt.Sprintf("ns-%04d", i)] = v1alpha1.NamespaceFigures{SelectedPods: 1, AcknowledgedPods: 1}
		}
		broken := fmt.Sprintf("ns-%04d", r.IntN(1000))
		perNS[broken] = v1alpha1.NamespaceFigures{SelectedPods: 2, AcknowledgedPods: 1}
		for round := range 200 {
			if round%20 == 0 {
				SetEnforcement(st, perNS)
			}
			n := int64(1 + r.IntN(50))
			ns := fmt.Sprintf("ns-%04d", r.IntN(1000))
			if r.IntN(4) == 0 {
				ns = "ns-0007" // a heavy hitter
				n *= 20
			}
			AddDecisions(st, ns, v1alpha1.NamespaceFigures{Blocked: n})
			counted += n
		}
		SetEnforcement(st, perNS)
		if len(st.Namespaces) > v1alpha1.MaxNamespacesListed {
			t.Fatalf("seed %d: %d namespaces listed", seed, len(st.Namespaces))
		}
		var sum int64
		var selected, listedBroken = int32(0), false
		for _, e := range st.Namespaces {
			sum += e.Blocked
			selected += e.SelectedPods
			listedBroken = listedBroken || e.Namespace == broken
		}
		sum += st.OtherNamespaces.Blocked
		selected += st.OtherNamespaces.SelectedPods
		if sum != counted {
			t.Fatalf("seed %d: %d blocked in status, %d counted", seed, sum, counted)
		}
		if selected != 1001 || int(st.OtherNamespaces.Namespaces)+len(st.Namespaces) != 1000 {
			t.Fatalf("seed %d: %d selected pods in %d+%d namespaces", seed, selected, st.OtherNamespaces.Namespaces, len(st.Namespaces))
		}
		if !listedBroken {
			t.Fatalf("seed %d: namespace %s, whose pods do not all enforce, is not listed", seed, broken)
		}
	}
}
