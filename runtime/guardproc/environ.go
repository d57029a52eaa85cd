package guardproc

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
)

// The guard holds credentials it must not leak: the platform's provider keys of keyless
// apps above all. Its environment is set by whoever can edit the guard container in the pod
// spec, who must not be able to reroute or read those credentials through settings the Go
// runtime and the standard library take from it: a proxy (HTTPS_PROXY) receives every
// call; a CA of theirs (SSL_CERT_FILE) lets them intercept TLS; GODEBUG=http2debug=2 logs
// each HTTP/2 request's headers, Authorization included, and is read when net/http is
// initialized, before main runs. So main first drops those variables and, when it dropped
// any, executes itself again without them (RestartWithout), before anything reads them.
// The outbound transports ignore the proxy and CA variables as well (runtime/egress).

// keptGoSettings are the Go runtime settings the guard honours. The injector sets
// GOMAXPROCS and GOMEMLIMIT from the guard's CPU and memory limits; GOGC tunes the
// collector (main). They trade CPU for memory, and read nothing and send nothing.
var keptGoSettings = map[string]bool{"GOMAXPROCS": true, "GOMEMLIMIT": true, "GOGC": true}

// ignoredNames are the other variables the guard drops, compared without case (net/http
// reads both HTTPS_PROXY and https_proxy): the proxy settings, the CA locations, the TLS
// key log file of the tools that write one, and net/http's HTTP/2 goroutine checks.
var ignoredNames = map[string]bool{
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "SSLKEYLOGFILE": true,
	"DEBUG_HTTP2_GOROUTINES": true,
}

// ignoredEnv reports whether the guard ignores the environment variable name: a Go
// runtime or toolchain setting other than keptGoSettings (GODEBUG, GOTRACEBACK, GORACE,
// GOCOVERDIR, GOROOT, ...), a gRPC setting (GRPC_*, which a gRPC library would read), or
// one of ignoredNames.
func ignoredEnv(name string) bool {
	upper := strings.ToUpper(name)
	switch {
	case ignoredNames[upper], strings.HasPrefix(upper, "GRPC_"):
		return true
	case goSetting(name):
		return !keptGoSettings[name]
	}
	return false
}

// goSetting reports whether name has the form of every variable the Go runtime and
// toolchain read: GO and upper-case letters or digits, no underscore. An application's
// variable such as GOOGLE_API_KEY (a remote classifier's credential) does not.
func goSetting(name string) bool {
	rest, ok := strings.CutPrefix(name, "GO")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// ScrubEnv splits environ (NAME=value entries, as os.Environ returns them) into the
// entries the guard keeps, in their order, and the names of the variables it ignores,
// sorted and each once. Applied to what it kept, it drops nothing.
func ScrubEnv(environ []string) (kept, dropped []string) {
	kept = make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if ignoredEnv(name) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	slices.Sort(dropped)
	return kept, slices.Compact(dropped)
}

// RestartWithout logs the names of the variables dropped (never their values) and
// executes the guard's own binary again, with the same arguments and env as its whole
// environment. It returns only when that fails.
func RestartWithout(env, dropped []string) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	log.Warn("The guard ignores these environment variables (proxy, TLS trust and debug settings); restarting without them",
		"variables", dropped)
	self, err := selfExecutable()
	if err != nil {
		return fmt.Errorf("restarting the guard without them: %w", err)
	}
	err = syscall.Exec(self, os.Args, env) //nolint:gosec // the guard's own binary, its own arguments
	return fmt.Errorf("restarting the guard without them: %w", err)
}
