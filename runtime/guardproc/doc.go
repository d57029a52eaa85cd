// Package guardproc is what a guard process does around the server it runs: the sidecar
// proxy (cmd/guard) and the Envoy external processor (cmd/guard-extproc) start alike. They
// drop the environment variables that could reroute, intercept or log their calls and
// execute themselves again without them (environ.go, ExitOnIgnoredEnv), make their memory
// unreadable to other processes of their user (dumpable_linux.go) and run the collector at
// GOGC=400 unless told otherwise (start.go, Start), get their policy from a policy file
// or the operator's control plane, which also takes back their decisions (policy.go), and
// serve /healthz, /readyz and /metrics on an admin listener whose clients are not trusted
// (admin.go). The sidecar returns the memory its requests used once it is idle (idle.go,
// IdleRelease).
package guardproc
