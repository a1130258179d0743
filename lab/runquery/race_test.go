//go:build race

package runquery

// raceSlowdown scales the wall-time bounds of the tests under the race
// detector, which makes this code 5 to 10 times slower.
const raceSlowdown = 10
