package s3test

import (
	"os/exec"
	"syscall"
)

// killWithParent has the kernel kill the server when the process that
// started it dies: a test binary killed by a timeout must not leave a
// server running on the machine.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
