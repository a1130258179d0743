//go:build !race

package runquery

// raceSlowdown scales the wall-time bounds of the tests under the race
// detector (1 without it).
const raceSlowdown = 1
