//go:build !linux

package versitygw

import "os/exec"

// killWithParent does nothing where the kernel offers no parent-death
// signal; Stop and the context still end the server.
func killWithParent(cmd *exec.Cmd) {}
