//go:build !linux

package guardproc

import "os"

// selfExecutable is the file the guard runs from.
func selfExecutable() (string, error) { return os.Executable() }
