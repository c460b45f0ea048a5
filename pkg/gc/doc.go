// Package gc garbage-collects dead containers and sandboxes.
//
// PlanContainerGC is the policy as a pure function over plain data: every
// container and sandbox of the node, which pods are still wanted, a Policy
// and the time. It keeps, per pod and container name, the newest dead
// instances (so `kubectl logs --previous` works), removes everything dead of
// pods that are gone, caps the number of dead containers node-wide (oldest
// first), and removes sandboxes that are not ready and hold no containers
// once they are superseded or their pod is gone. ContainerGC does the I/O
// around it through the small Runtime interface; the agent calls
// GarbageCollect from housekeeping, once a minute.
//
// See docs/GC.md.
package gc
