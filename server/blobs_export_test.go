package server

import "github.com/apache/arrow-go/v18/arrow"

// SetReleaseTaken replaces how the bytes endpoint releases the batch of a
// plain binary value, until the test's cleanup restores it.
func SetReleaseTaken(cleanup func(func()), f func(arrow.RecordBatch)) {
	old := releaseTaken
	releaseTaken = f
	cleanup(func() { releaseTaken = old })
}
