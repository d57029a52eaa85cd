package guardproc

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
)

// ExitOnIgnoredEnv is the first thing a guard process does: started with variables it must
// not honour (ScrubEnv), it starts again without them before it reads anything or holds any
// credential, and exits with status 2 if it cannot. name is the process as its log names it.
func ExitOnIgnoredEnv(name string) {
	env, dropped := ScrubEnv(os.Environ())
	if len(dropped) == 0 {
		return
	}
	err := RestartWithout(env, dropped)
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error(name+" not started: unset the variables it ignores",
		"variables", dropped, "error", err.Error())
	os.Exit(2)
}

// gcPercent is the guard processes' GOGC unless the environment sets one. A guard's live
// heap is small (a few MiB) while each request allocates tens of KiB: with the default 100
// it collects several times a second at a few hundred requests per second, and those
// cycles set its latency tail. 400 trades ~10 MiB of RSS under load for a p99 at a plain
// proxy's (test/load).
const gcPercent = 400

// Start makes a guard process's logger (JSON on stderr at level: debug, info, warn or error)
// and sets the process up as every guard process runs: its memory unreadable to other
// processes of its user, a warning when the system has no CA certificates, and GOGC=400
// unless GOGC is set. An unknown level is an error and nothing is set up.
func Start(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	if err := Undumpable(); err != nil {
		log.Warn("The process's memory stays readable by processes of its user (prctl PR_SET_DUMPABLE failed)", "error", err.Error())
	}
	if err := egress.SystemRootsPresent(); err != nil {
		log.Warn("No system CA certificates: https upstreams and classifiers without a CA bundle of their own will fail", "error", err.Error())
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	return log, nil
}
