//go:build !race

package vector

// hnswRace is true under the race detector, which makes big builds slow.
const hnswRace = false
