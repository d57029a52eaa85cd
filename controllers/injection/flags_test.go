package injection

import (
	"context"
	"flag"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (Options, error) {
		t.Helper()
		var f Flags
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, args...)); err != nil {
			t.Fatal(err)
		}
		return f.options(context.Background(), nil)
	}
	t.Run("the defaults make a working configuration", func(t *testing.T) {
		o, err := parse(t)
		if err != nil {
			t.Fatal(err)
		}
		c := o.Config
		if c.OperatorNamespace != "ops" || c.Image != "guard:1" || c.Command[0] != "/guard" || c.ProxyPort != 15080 || c.AdminPort != 15090 {
			t.Fatalf("config = %+v", c)
		}
		if !o.SelfManagedCerts || o.NativeSidecars != nil || !c.CPULimit.IsZero() || c.MemoryLimit.String() != "256Mi" {
			t.Fatalf("options = %+v", o)
		}
	})
	t.Run("native sidecars can be forced", func(t *testing.T) {
		o, err := parse(t, "--native-sidecars=false", "--cert-management=external")
		if err != nil || o.NativeSidecars == nil || *o.NativeSidecars || o.SelfManagedCerts {
			t.Fatalf("options = %+v, %v", o, err)
		}
	})
	for _, bad := range []struct{ arg, says string }{
		{"--guard-memory-limit=-1Gi", "--guard-memory-limit"},
		{"--guard-cpu-request=lots", "--guard-cpu-request"},
		{"--guard-openai-upstream=api.openai.com", "--guard-openai-upstream"},
		{"--cert-management=manual", "--cert-management"},
		{"--native-sidecars=yes", "--native-sidecars"},
		{"--guard-admin-port=15080", "must differ"},
		{"--guard-proxy-port=70000", "out of range"},
	} {
		t.Run(bad.arg+" is refused at start", func(t *testing.T) {
			if _, err := parse(t, bad.arg); err == nil || !strings.Contains(err.Error(), bad.says) {
				t.Fatalf("error = %v, want one naming %s", err, bad.says)
			}
		})
	}
}
