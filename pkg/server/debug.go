package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/pkg/pod"
)

// installDebug adds the operator endpoints of upstream's kubelet API that
// are not about one pod's containers: /configz, /debug/pprof, /runningpods,
// /checkpoint and /logs/.
func installDebug(mux *http.ServeMux, d APIDeps) {
	mux.Handle("GET /configz", configzHandler(d.Configz))
	mux.Handle("GET /runningpods/", runningPodsHandler(d))
	mux.Handle("POST /checkpoint/{namespace}/{pod}/{container}", checkpointHandler(d))
	mux.Handle("GET /logs/", nodeLogsHandler(d.NodeLogs))
	mux.Handle("PUT /debug/flags/v", verbosityHandler(d.SetVerbosity))
	if d.Profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
}

// configzHandler serves the configuration in effect as upstream prints it:
// {"kubeletconfig": {...}}.
func configzHandler(config func() *kubeletconfigv1beta1.KubeletConfiguration) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if config == nil {
			return notImplemented("configz")
		}
		return writeJSON(w, map[string]any{"kubeletconfig": config()})
	})
}

// verbosityHandler changes the log verbosity to the level in the body, as
// upstream's PUT /debug/flags/v.
func verbosityHandler(set func(int) error) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if set == nil {
			return notImplemented("debug flags")
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64))
		if err != nil {
			return fmt.Errorf("read the level: %w", err)
		}
		level, err := strconv.Atoi(strings.TrimSpace(string(body)))
		if err != nil {
			return fmt.Errorf("log verbosity %q: want a number: %w", body, ErrBadRequest)
		}
		if err := set(level); err != nil {
			return fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		klog.InfoS("Log verbosity changed through the node API", "level", level)
		writeText(w, http.StatusOK, fmt.Sprintf("successfully set klog.logging.verbosity to %d", level))
		return nil
	})
}

// runningPodsHandler serves what the runtime runs, as a PodList of pods
// with only their identity and running containers (upstream's
// /runningpods/).
func runningPodsHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.RunningPods == nil {
			return notImplemented("running pods")
		}
		pods, err := d.RunningPods(r.Context())
		if err != nil {
			return fmt.Errorf("list running pods: %w", err)
		}
		list := v1.PodList{}
		list.APIVersion, list.Kind = "v1", "PodList"
		for _, p := range pods {
			list.Items = append(list.Items, *p)
		}
		return writeJSON(w, list)
	})
}

// checkpointHandler asks the runtime for a checkpoint archive of a running
// container, written under CheckpointDir as upstream names it
// (checkpoint-<name>_<namespace>-<container>-<RFC 3339 time>.tar), and
// answers {"items": [path]}. ?timeout=<seconds> bounds the runtime's work.
func checkpointHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.Checkpoint == nil || d.CheckpointDir == "" {
			return notImplemented("checkpoint")
		}
		var timeout time.Duration
		if s := r.URL.Query().Get("timeout"); s != "" {
			secs, err := strconv.ParseUint(s, 10, 32)
			if err != nil || secs == 0 {
				return fmt.Errorf("timeout %q: want a positive number of seconds: %w", s, ErrBadRequest)
			}
			timeout = time.Duration(secs) * time.Second
		}
		p, err := d.podFromPath(r)
		if err != nil {
			return err
		}
		c, err := d.runningContainerOf(r.Context(), p, r.PathValue("container"))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(d.CheckpointDir, 0o700); err != nil {
			return fmt.Errorf("checkpoint directory: %w", err)
		}
		// The names come from the pod as nodelet knows it (validated API
		// names), not from the request path.
		name := fmt.Sprintf("checkpoint-%s-%s-%s.tar", pod.FullName(p), c.Name, time.Now().Format(time.RFC3339))
		location := filepath.Join(d.CheckpointDir, name)
		if err := d.Checkpoint(r.Context(), c.ID, location, timeout); err != nil {
			return fmt.Errorf("checkpoint of %s/%s/%s: %w", p.Namespace, p.Name, c.Name, err)
		}
		return writeJSON(w, map[string][]string{"items": {location}})
	})
}
