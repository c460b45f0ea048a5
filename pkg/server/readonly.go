package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewReadOnlyServer returns the unauthenticated read-only server (upstream's
// --read-only-port), serving ReadOnlyRoutes of deps.
func NewReadOnlyServer(addr string, deps APIDeps) *Server {
	return NewServer("read-only", addr, ReadOnlyHandler(deps))
}

// ReadOnlyHandler is the read-only server's handler, counted in
// kubelet_http_requests_* as server_type "readonly". It serves what
// upstream's read-only port serves, its "default handlers": /healthz,
// /pods, /stats/ and the four /metrics endpoints, without authentication;
// nothing that acts on a pod (logs, exec, attach, port-forward, run) and no
// debugging endpoint (configz, pprof, node logs), whatever deps holds.
func ReadOnlyHandler(deps APIDeps) http.Handler {
	mux := http.NewServeMux()
	installDefault(mux, deps)
	return countKubeletHTTP(mux, serverReadOnly)
}

// PodsHandler answers with a v1.PodList (kind PodList, apiVersion v1) of the
// pods returned by pods, as upstream's /pods does; the node API reuses it.
func PodsHandler(pods func() []*v1.Pod) http.Handler {
	return CachedPodsHandler(pods, nil)
}

// CachedPodsHandler is PodsHandler that reuses the encoded list while
// version returns the same value; a nil version encodes on every request.
func CachedPodsHandler(pods func() []*v1.Pod, version func() uint64) http.Handler {
	c := &podListCache{pods: pods, version: version}
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if pods == nil {
			return fmt.Errorf("listing pods: %w", ErrNotImplemented)
		}
		data, err := c.body()
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data) // a client that went away is not our error
		return nil
	})
}

// podListCache holds the last encoded pod list and the version it was made
// at. The version is read before the pods, so a body is never labelled
// with a version newer than its content: a change racing the encoding
// shows as a new version at the next request.
type podListCache struct {
	pods    func() []*v1.Pod
	version func() uint64

	mu    sync.Mutex
	valid bool
	at    uint64
	data  []byte
}

func (c *podListCache) body() ([]byte, error) {
	if c.version == nil {
		return encodePodList(c.pods())
	}
	v := c.version()
	// Held while encoding: concurrent pollers wait for one encoding
	// rather than each doing their own.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && c.at == v {
		return c.data, nil
	}
	data, err := encodePodList(c.pods())
	if err != nil {
		return nil, err
	}
	c.valid, c.at, c.data = true, v, data
	return data, nil
}

// encodePodList encodes pods as a v1.PodList. It encodes fully before
// anything is written, so a failure is a clean 500 rather than a truncated
// 200.
func encodePodList(pods []*v1.Pod) ([]byte, error) {
	list := v1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		// Never null: clients iterate .items without a nil check.
		Items: []v1.Pod{},
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		item := *p // shallow copy: only the copy's TypeMeta changes
		// Items carry no kind, like list items from the API server;
		// static pods decoded from manifests would otherwise have one.
		item.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, item)
	}
	data, err := json.Marshal(&list)
	if err != nil {
		return nil, fmt.Errorf("encoding pod list: %w", err)
	}
	return data, nil
}
