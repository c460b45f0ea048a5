// Package images garbage-collects container images so that the image
// filesystem never fills up, without ever removing an image a pod needs.
//
// The decision is a pure function, PlanImageGC, over plain data: the usage
// of the image filesystem, one ImageRecord per image (size, first seen, last
// used, pinned, in use) and a Policy. The Manager does the I/O around it: it
// lists images and containers through the small Runtime interface, keeps the
// first-seen / last-used bookkeeping in memory, measures the filesystem
// (CRI ImageFsInfo for the mountpoint, statfs for capacity and free space),
// removes what the plan says, and reports through klog, Prometheus metrics
// and Kubernetes events.
//
// See docs/GC.md for the policy, its defaults and the flags that set it.
package images
