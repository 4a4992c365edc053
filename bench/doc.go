// Package bench runs the same workloads through lancer and through real
// Lance in one run and prints the ratios. Timings are reported, never
// asserted.
//
// (Not yet implemented: this package is filled in by the benchmark work.)
package bench
