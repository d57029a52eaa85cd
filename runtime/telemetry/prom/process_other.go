//go:build !linux

package prom

// RegisterProcess registers nothing where there is no /proc to read: the guard runs on
// Linux; this keeps it building elsewhere.
func RegisterProcess(*Registry) {}
