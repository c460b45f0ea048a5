//go:build linux

// Command pause is nodelet's sandbox ("infra") container: the process that holds a pod's namespaces
// open for as long as the pod exists. It is built statically (CGO_ENABLED=0) and packaged by
// hack/runtime-up.sh as registry.k8s.io/pause:3.10, because no registry is reachable from where nodelet
// is developed and tested.
//
// It behaves like upstream's pause.c: it sleeps until SIGINT or SIGTERM and then exits 0, and, being
// PID 1 of the pod when the pod shares one PID namespace, it reaps every orphaned child re-parented
// to it so that zombies never pile up.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is printed by -v, as upstream's pause does, so one can tell ours from a real pause image.
const version = "3.10-nodelet"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Printf("pause version %s\n", version)
		return
	}
	if os.Getpid() != 1 {
		// Same warning as upstream: outside a PID namespace nothing gets re-parented to us, so the
		// reaping below does nothing useful, but pausing still works.
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}

	// Buffered generously: SIGCHLDs coalesce in the kernel anyway, and reap() collects every exited
	// child per wake-up, so a dropped notification cannot leave a zombie behind for long.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)

	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			// Upstream prints this too; it ends up in the sandbox's log, which helps when a pod
			// teardown is being debugged.
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		// pid == 0: children exist but none has exited; ECHILD: no children at all.
		if pid <= 0 || err != nil {
			return
		}
	}
}
