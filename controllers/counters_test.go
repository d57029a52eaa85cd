package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A status counter is only ever added to: the apiserver refuses a negative one, whoever
// writes it (the red team's forged batches once made BLOCKED read -1).
var _ = Describe("Status counters", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	DescribeTable("a negative counter is refused by the apiserver, naming the field",
		func(kind, name, patch, wantField string) {
			var obj client.Object
			if kind == "Guardrail" {
				Expect(k8sClient.Create(ctx, newClassifier(ns, "c"))).To(Succeed())
				g := newGuardrail(ns, name, "c")
				Expect(k8sClient.Create(ctx, g)).To(Succeed())
				obj = g
			} else {
				c := newClassifier(ns, name)
				Expect(k8sClient.Create(ctx, c)).To(Succeed())
				obj = c
			}
			err := k8sClient.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField))
		},
		Entry("blocked", "Guardrail", "g", `{"status":{"decisions":{"blocked":-1}}}`, "status.decisions.blocked"),
		Entry("wouldBlock", "Guardrail", "g", `{"status":{"decisions":{"wouldBlock":-2}}}`, "status.decisions.wouldBlock"),
		Entry("a category's matches", "Guardrail", "g", `{"status":{"decisions":{"categories":[{"name":"pii","matches":-1}]}}}`, "matches"),
		Entry("a classifier's calls", "Classifier", "c2", `{"status":{"calls":{"total":-1}}}`, "status.calls.total"),
		Entry("a classifier's errors", "Classifier", "c2", `{"status":{"calls":{"errors":{"TIMEOUT":-1}}}}`, "status.calls.errors"),
	)
})
