//go:build mutation

package builtin

// splitStride under `make mutation`: every fifth split point (scale_test.go says why).
const splitStride = 5
