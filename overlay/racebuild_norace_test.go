//go:build !race

package overlay

const raceBuild = false
