//go:build !mutation

package builtin

// splitStride is the step between the split points the streaming property tests try: every
// one. `make mutation` builds the tests with the mutation tag, where a coarser step keeps a
// run of thousands of mutants within an hour (scale_mutation_test.go); it can only let a
// mutant live, never kill one the full tests would not.
const splitStride = 1
