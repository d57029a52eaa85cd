//go:build !linux

package main

import "os"

// selfExecutable is the file the guard runs from.
func selfExecutable() (string, error) { return os.Executable() }
