package guardproc

// selfExecutable is the file the guard runs from: the kernel's link to the very binary,
// even if its path was replaced since.
func selfExecutable() (string, error) { return "/proc/self/exe", nil }
