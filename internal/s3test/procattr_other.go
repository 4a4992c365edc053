//go:build !linux

package s3test

import "os/exec"

// killWithParent does nothing where the kernel offers no parent-death
// signal; Stop and the context still end the server.
func killWithParent(cmd *exec.Cmd) {}
