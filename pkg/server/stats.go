package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// summaryHandler serves /stats/summary: node, pod and container usage in
// the kubelet stats API (k8s.io/kubelet/pkg/apis/stats/v1alpha1).
// ?only_cpu_and_memory=true leaves out filesystem and network figures, as
// upstream.
func summaryHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.Summary == nil {
			return notImplemented("stats summary")
		}
		only := false
		if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("only_cpu_and_memory %q is not a boolean: %w", v, ErrBadRequest)
			}
			only = b
		}
		s, err := d.Summary(r.Context(), only)
		if err != nil {
			return fmt.Errorf("stats summary: %w", err)
		}
		return writeJSON(w, s)
	})
}

// containerStatsHandler serves the legacy per-container stats paths
// /stats/{namespace}/{pod}/{uid}/{container} and /stats/{pod}/{container}
// (namespace default). The UID may be the static pod's or its mirror pod's.
// The answer is the container's entry of the summary API
// (statsapi.ContainerStats), not cAdvisor's ContainerInfo.
func containerStatsHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.ContainerStats == nil {
			return notImplemented("container stats")
		}
		p, err := d.podFromPath(r)
		if err != nil {
			return err
		}
		c, err := d.findContainer(r.Context(), p, r.PathValue("container"), false)
		if err != nil {
			return err
		}
		s, err := d.ContainerStats(r.Context(), c.ID)
		if err != nil {
			return fmt.Errorf("stats of container %q in pod %s/%s: %w", c.Name, p.Namespace, p.Name, err)
		}
		return writeJSON(w, s)
	})
}

// writeJSON encodes v fully before writing, so a failure is a clean 500
// rather than a truncated 200.
func writeJSON(w http.ResponseWriter, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data) // a client that went away is not our error
	return nil
}
