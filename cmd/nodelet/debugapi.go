package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/server"
)

// runningPods is what the runtime runs, as upstream's /runningpods/ shows
// it: a pod per ready sandbox or running container of a pod nodelet (or
// another kubelet) made, with its identity and its running containers'
// names and images only. Containers without a kubelet's identity are not
// pods and are left out.
func runningPods(s *cri.PodState) []*v1.Pod {
	byUID := map[types.UID]*v1.Pod{}
	var order []types.UID
	get := func(uid types.UID, name, namespace string) *v1.Pod {
		p, ok := byUID[uid]
		if !ok {
			p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: uid}}
			byUID[uid] = p
			order = append(order, uid)
		}
		return p
	}
	for _, sb := range s.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if id, err := cri.ParseSandboxIdentity(sb.Labels, sb.Annotations); !errors.Is(err, cri.ErrNotManaged) {
			get(id.PodUID, id.PodName, id.PodNamespace)
		}
	}
	for _, c := range s.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		// Only the labels matter here: a container whose annotations do
		// not parse still runs in its pod.
		id, err := cri.ParseContainerIdentity(c.Labels, c.Annotations)
		if errors.Is(err, cri.ErrNotManaged) {
			continue
		}
		p := get(id.PodUID, id.PodName, id.PodNamespace)
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: id.ContainerName, Image: c.GetImage().GetImage()})
	}
	out := make([]*v1.Pod, 0, len(order))
	for _, uid := range order {
		out = append(out, byUID[uid])
	}
	return out
}

// checkpointer adapts the CRI client to the node API: a runtime without
// checkpointing is the API's ErrUnsupported (501 with the reason), not an
// internal error.
func checkpointer(rt *cri.Client) func(ctx context.Context, id, location string, timeout time.Duration) error {
	return func(ctx context.Context, id, location string, timeout time.Duration) error {
		err := rt.CheckpointContainer(ctx, id, location, timeout)
		if errors.Is(err, cri.ErrUnimplemented) {
			return fmt.Errorf("%w: %w", server.ErrUnsupported, err)
		}
		return err
	}
}

// nodeLogs is /logs/ as upstream serves it: the files under /var/log, and
// with enableSystemLogQuery the node log query, through journalctl where
// the node has a journal.
func nodeLogs(opts *options.Options) *server.NodeLogs {
	if !opts.EnableSystemLogHandler {
		return nil
	}
	nl := &server.NodeLogs{Dir: "/var/log", Query: opts.EnableSystemLogQuery}
	journalctl, err := exec.LookPath("journalctl")
	if err != nil {
		// Services' logs are then looked for in files, as upstream does
		// for a service that does not log to the journal.
		return nl
	}
	nl.Journal = func(ctx context.Context, args []string, w io.Writer) error {
		cmd := exec.CommandContext(ctx, journalctl, args...)
		cmd.Stdout, cmd.Stderr = w, w
		var exit *exec.ExitError
		if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
			return err
		}
		return nil
	}
	nl.HasJournal = func(ctx context.Context, service string) bool {
		out, err := exec.CommandContext(ctx, journalctl, "--field", "_SYSTEMD_UNIT").Output()
		if err != nil {
			return false
		}
		for _, unit := range strings.Split(string(out), "\n") {
			if unit == service || unit == service+".service" {
				return true
			}
		}
		return false
	}
	return nl
}
