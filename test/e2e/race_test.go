//go:build race

package e2e

// Under -race the guard binary is built with the race detector too, and a race it
// reports fails the test that ran it (see guard.stop).
func init() { buildFlags = append(buildFlags, "-race") }
