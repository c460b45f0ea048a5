package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadOnlyDeps are what the read-only server reads from. A nil function makes
// its endpoint answer 501 Not Implemented.
type ReadOnlyDeps struct {
	// Pods returns the pods bound to this node, with their current statuses
	// merged in. It must be safe for concurrent use; the returned pods are
	// only read.
	Pods func() []*v1.Pod
	// HealthChecks back /healthz, as on the healthz server.
	HealthChecks []HealthCheck
}

// NewReadOnlyServer returns the unauthenticated read-only server (upstream's
// --read-only-port): GET /pods and GET /healthz.
func NewReadOnlyServer(addr string, deps ReadOnlyDeps) *Server {
	return NewServer("read-only", addr, ReadOnlyHandler(deps))
}

// ReadOnlyHandler is the read-only server's handler.
func ReadOnlyHandler(deps ReadOnlyDeps) http.Handler {
	mux := http.NewServeMux()
	InstallHealthz(mux, deps.HealthChecks...)
	mux.Handle("GET /pods", PodsHandler(deps.Pods))
	return mux
}

// PodsHandler answers with a v1.PodList (kind PodList, apiVersion v1) of the
// pods returned by pods, as upstream's /pods does; the node API reuses it.
func PodsHandler(pods func() []*v1.Pod) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if pods == nil {
			return fmt.Errorf("listing pods: %w", ErrNotImplemented)
		}
		list := v1.PodList{
			TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			// Never null: clients iterate .items without a nil check.
			Items: []v1.Pod{},
		}
		for _, p := range pods() {
			if p == nil {
				continue
			}
			item := *p // shallow copy: only the copy's TypeMeta changes
			// Items carry no kind, like list items from the API server;
			// static pods decoded from manifests would otherwise have one.
			item.TypeMeta = metav1.TypeMeta{}
			list.Items = append(list.Items, item)
		}
		// Encode fully before writing, so a failure is a clean 500 rather
		// than a truncated 200.
		data, err := json.Marshal(&list)
		if err != nil {
			return fmt.Errorf("encoding pod list: %w", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data) // a client that went away is not our error
		return nil
	})
}
