//go:build !race

package api_test

// raceDetector: the race detector is on; it makes allocations larger.
const raceDetector = false
