//go:build race

package overlay

// raceBuild: the tests run with the race detector, whose allocations
// are not the program's (allocation bounds are checked without it).
const raceBuild = true
