//go:build !linux

package guardproc

// Undumpable does nothing outside Linux, where the guard runs as a sidecar.
func Undumpable() error { return nil }
