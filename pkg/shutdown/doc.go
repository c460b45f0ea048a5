// Package shutdown is graceful node shutdown: where systemd-logind runs,
// nodelet holds a "delay" inhibitor lock on shutdown, and when logind
// announces that the machine is going down (PrepareForShutdown) it marks
// the node not ready, stops the regular pods and then the critical ones
// within shutdownGracePeriod, and releases the lock so the shutdown goes on.
//
// What happens to which pod is decided by pure functions (plan.go); the
// logind conversation (logind.go, over D-Bus) and the pods and node the
// Manager acts on are interfaces, so the whole sequence is tested without
// a system bus.
package shutdown
