package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cluster is what the agent needs of the API server when nodelet is a
// cluster member (--kubeconfig). Standalone, it is nil and nothing of this
// runs. Implementations must not block the caller on the network: they queue.
type Cluster interface {
	// SyncMirror makes the API's mirror of a static pod match it: creates
	// it when missing, replaces it when its config hash is outdated or it is
	// being deleted. mirror is the one the pod manager knows, or nil. Runs on
	// the static pod's worker goroutine.
	SyncMirror(ctx context.Context, static, mirror *v1.Pod) error
	// DeleteMirror deletes a mirror pod whose static pod is gone.
	DeleteMirror(ctx context.Context, mirror *v1.Pod) error
	// SetPodStatus queues the pod's latest status for the API (a static
	// pod's lands on its mirror).
	SetPodStatus(pod *v1.Pod, status v1.PodStatus)
	// PodKilled reports that an API pod being deleted has no container
	// running any more, so its object may be removed from the API.
	PodKilled(pod *v1.Pod, status v1.PodStatus)
	// ForgetPod drops what is queued for a pod that left the node.
	ForgetPod(uid types.UID)
}
