// Package arrays assembles Arrow arrays from decoded buffers for every file
// generation: decoders produce plain Go byte slices (little-endian values,
// LSB-first bitmaps) and these helpers wrap them without copying. It also
// bounds values with no bytes behind them (AllowSynthetic), so that counts
// taken from metadata alone cannot make a read allocate without limit.
package arrays
