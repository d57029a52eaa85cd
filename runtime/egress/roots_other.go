//go:build !linux

package egress

// Outside Linux, crypto/x509 chooses (SystemRoots returns a nil pool).
var bundleFiles, caDirs []string
