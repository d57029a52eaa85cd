package validation

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
)

// corpus holds hand-picked values at the edges of each rule; random values from an
// alphabet of the characters the rules care about follow.
func corpus() []string {
	long := strings.Repeat("a", 63)
	vals := []string{
		"", "a", "A", "0", "-", "_", ".", "/", "a-b", "a_b", "a.b", "-a", "a-", "_a", "a_", ".a", "a.",
		"my-name", "123-abc", "My-Name", "my.name", "my..name", "my_name", "a b", "é", "a\x00", "\xff",
		long, long + "a", long + "." + long, strings.Repeat(long+".", 4) + "a",
		"example.com/name", "example.com/", "/name", "/", "a/b/c", "Example.com/name", "ex_ample.com/name",
		"-example.com/n", "example.com./n", strings.Repeat("a.", 127) + "a/n", strings.Repeat("a.", 127) + "ab/n",
		"app.kubernetes.io/name", "tier", "x/" + long, "x/" + long + "b", "x/-a", "x/a.", "x/ab_c.d-e",
		"12345", "my_value", "MyValue", "a..b", "a.-b",
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "aZ09-_./ é"
	for range 3000 {
		n := r.IntN(12)
		if r.IntN(10) == 0 {
			n = 60 + r.IntN(8)
		}
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		vals = append(vals, b.String())
	}
	return vals
}

// Every value gets apimachinery's messages, in apimachinery's order.
func TestMatchesApimachinery(t *testing.T) {
	checks := []struct {
		name         string
		ours, theirs func(string) []string
	}{
		{"IsDNS1123Label", IsDNS1123Label, k8svalidation.IsDNS1123Label},
		{"IsQualifiedName", IsQualifiedName, k8svalidation.IsQualifiedName},
		{"IsValidLabelValue", IsValidLabelValue, k8svalidation.IsValidLabelValue},
	}
	for _, c := range checks {
		valid := 0
		for _, v := range corpus() {
			o, th := c.ours(v), c.theirs(v)
			if len(o) == 0 && len(th) == 0 {
				valid++
				continue
			}
			if !reflect.DeepEqual(o, th) {
				t.Errorf("%s(%q):\n ours   %q\n theirs %q", c.name, v, o, th)
			}
		}
		if valid == 0 {
			t.Errorf("%s: no valid value in the corpus", c.name)
		}
	}
}
