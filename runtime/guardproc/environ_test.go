package guardproc

import (
	"slices"
	"strings"
	"testing"
)

func TestTheGuardIgnoresProxyTLSAndDebugVariables(t *testing.T) {
	for _, c := range []struct {
		name    string
		ignored bool
	}{
		// What the injector sets, and what main reads.
		{"GOMAXPROCS", false},
		{"GOMEMLIMIT", false},
		{"GOGC", false},
		{"POD_NAME", false},
		{"POD_NAMESPACE", false},
		{"POD_LABELS", false},
		// A remote classifier's credential, named by its credentials-env annotation.
		{"GOOGLE_API_KEY", false},
		{"OPENAI_API_KEY", false},
		{"GO_JUDGE_TOKEN", false},
		{"PATH", false},
		{"HOME", false},
		{"TZ", false},
		{"NIX_SSL_CERT_FILE", false}, // read by nothing in the guard
		// Proxies, in any case.
		{"HTTPS_PROXY", true},
		{"https_proxy", true},
		{"Https_Proxy", true},
		{"HTTP_PROXY", true},
		{"http_proxy", true},
		{"NO_PROXY", true},
		{"no_proxy", true},
		{"ALL_PROXY", true},
		{"all_proxy", true},
		// TLS trust and secrets.
		{"SSL_CERT_FILE", true},
		{"SSL_CERT_DIR", true},
		{"ssl_cert_file", true},
		{"SSLKEYLOGFILE", true},
		// Go runtime, standard library and toolchain settings but the kept ones.
		{"GODEBUG", true},
		{"GOTRACEBACK", true},
		{"GORACE", true},
		{"GOCOVERDIR", true},
		{"GOROOT", true},
		{"GOFLAGS", true},
		{"GOAMD64", true},
		{"GOFIPS140", true},
		{"DEBUG_HTTP2_GOROUTINES", true},
		// gRPC's.
		{"GRPC_GO_LOG_SEVERITY_LEVEL", true},
		{"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", true},
		{"grpc_trace", true},
	} {
		if got := ignoredEnv(c.name); got != c.ignored {
			t.Errorf("ignoredEnv(%q) = %v, want %v", c.name, got, c.ignored)
		}
	}
}

func TestScrubEnvKeepsTheRestInOrderAndNamesWhatItDrops(t *testing.T) {
	for _, c := range []struct {
		name          string
		environ       []string
		kept, dropped []string
	}{
		{"nothing to drop", []string{"PATH=/bin", "GOMAXPROCS=2", "POD_NAME=app-0"},
			[]string{"PATH=/bin", "GOMAXPROCS=2", "POD_NAME=app-0"}, nil},
		{"an empty environment", nil, []string{}, nil},
		{"the hostile settings", []string{"PATH=/bin", "GODEBUG=http2debug=2", "HTTPS_PROXY=http://10.0.0.9:3128",
			"GOMEMLIMIT=200000000", "SSL_CERT_FILE=/tmp/tenant-ca.pem", "https_proxy=http://10.0.0.9:3128", "GOGC=400"},
			[]string{"PATH=/bin", "GOMEMLIMIT=200000000", "GOGC=400"},
			[]string{"GODEBUG", "HTTPS_PROXY", "SSL_CERT_FILE", "https_proxy"}},
		{"a name given twice is named once", []string{"GODEBUG=a", "GODEBUG=b", "HOME=/"}, []string{"HOME=/"}, []string{"GODEBUG"}},
		{"an empty value still counts", []string{"HTTP_PROXY=", "HOME=/"}, []string{"HOME=/"}, []string{"HTTP_PROXY"}},
		{"a value naming an ignored variable is not a name", []string{"NOTE=GODEBUG=1", "X=HTTPS_PROXY"},
			[]string{"NOTE=GODEBUG=1", "X=HTTPS_PROXY"}, nil},
		{"an entry without '=' is no variable and is kept", []string{"GARBAGE", "HOME=/"}, []string{"GARBAGE", "HOME=/"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, dropped := ScrubEnv(c.environ)
			if !slices.Equal(kept, c.kept) || !slices.Equal(dropped, c.dropped) {
				t.Errorf("ScrubEnv(%q) = %q, %q; want %q, %q", c.environ, kept, dropped, c.kept, c.dropped)
			}
			for _, d := range dropped {
				if strings.Contains(d, "=") {
					t.Errorf("the dropped name %q carries a value", d)
				}
			}
			// The restarted guard must find nothing to drop, or it would restart forever.
			if again, more := ScrubEnv(kept); len(more) != 0 || !slices.Equal(again, kept) {
				t.Errorf("scrubbing again drops %q", more)
			}
		})
	}
}
