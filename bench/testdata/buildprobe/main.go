// Command buildprobe is a tiny binary for TestModuleSizes: it links the
// standard library, lancer's root package and one arrow-go package.
package main

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

func main() {
	fmt.Println(lancer.ErrCorrupt, memory.NewGoAllocator() != nil)
}
