//go:build race

package main

// raceEnabled: the tests run with the race detector, and so does the
// binary they build.
const raceEnabled = true
