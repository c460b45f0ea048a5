package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient is the part of the CRI the benchmark uses: the raw-CRI leg and cleaning the runtime
// between legs.
type criClient struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
}

func dialCRI(ctx context.Context, endpoint string) (*criClient, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	c := &criClient{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn)}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.rt.Version(vctx, &runtimeapi.VersionRequest{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("CRI Version on %s: %w", endpoint, err)
	}
	_ = v
	return c, nil
}

func (c *criClient) version(ctx context.Context) string {
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "unknown"
	}
	return v.RuntimeName + " " + v.RuntimeVersion
}

// requireImages fails early, with a clear message, when the images the pods use are not loaded.
func (c *criClient) requireImages(ctx context.Context, images ...string) error {
	for _, ref := range images {
		st, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			return fmt.Errorf("ImageStatus %s: %w", ref, err)
		}
		if st.Image == nil {
			return fmt.Errorf("image %s is not loaded in the runtime (hack/runtime-up.sh loads it)", ref)
		}
	}
	return nil
}

// runPod is the floor every agent builds on: RunPodSandbox (host network) + CreateContainer +
// StartContainer, nothing else.
func (c *criClient) runPod(ctx context.Context, name, logDir string) error {
	uid := fmt.Sprintf("bench-raw-%s-%d", name, time.Now().UnixNano())
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		LogDirectory: logDir + "/" + uid,
		Labels:       map[string]string{"bench.nodelet.dev/leg": "raw"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			},
		},
	}
	sb, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		return fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	ctr, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image:    &runtimeapi.ImageSpec{Image: busyboxImage},
			Command:  []string{"sleep", "3600"},
			LogPath:  "c/0.log",
			Labels:   map[string]string{"bench.nodelet.dev/leg": "raw"},
		},
		SandboxConfig: sbCfg,
	})
	if err != nil {
		return fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if _, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		return fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return nil
}

// cleanAttempts bounds clean's retries: on a loaded machine a container the agent was still
// starting when it was stopped may come up after StopPodSandbox, and RemovePodSandbox then
// refuses ("container is still running, to stop first").
const cleanAttempts = 5

// clean empties the runtime, so that each leg starts from an empty one: every container stopped,
// then every sandbox stopped and removed, then what is left of the containers removed; all that
// again, up to cleanAttempts times, until nothing is left. The runtime is the benchmark's own (a
// temporary state dir).
func (c *criClient) clean(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= cleanAttempts; attempt++ {
		if err = c.cleanOnce(ctx); err == nil {
			return nil
		}
		if attempt < cleanAttempts {
			logf("runtime clean-up, attempt %d of %d: %v; again", attempt, cleanAttempts, err)
			if serr := sleep(ctx, time.Duration(attempt)*time.Second); serr != nil {
				return serr
			}
		}
	}
	return fmt.Errorf("after %d attempts: %w", cleanAttempts, err)
}

func (c *criClient) cleanOnce(ctx context.Context) error {
	ctrs, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("ListContainers: %w", err)
	}
	var running []string
	for _, ct := range ctrs.Containers {
		if ct.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			running = append(running, ct.Id)
		}
	}
	// Timeout 0: the bench pods need no grace (a busybox sleep ignores SIGTERM as PID 1 and
	// would hold every stop for the whole timeout); killed at once, as StopPodSandbox does.
	errs := forEach(running, func(id string) error {
		_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0})
		return wrapf(err, "StopContainer %s", id)
	})
	sbs, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("ListPodSandbox: %w", err)
	}
	ids := make([]string, len(sbs.Items))
	for i, sb := range sbs.Items {
		ids[i] = sb.Id
	}
	errs = append(errs, forEach(ids, func(id string) error {
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", id, err)
		}
		_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		return wrapf(err, "RemovePodSandbox %s", id)
	})...)
	if ctrs, err = c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		return fmt.Errorf("ListContainers: %w", err)
	}
	for _, ct := range ctrs.Containers {
		_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ct.Id})
		if err := wrapf(err, "RemoveContainer %s", ct.Id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	left, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("ListPodSandbox: %w", err)
	}
	if n := len(left.Items); n > 0 {
		return fmt.Errorf("%d sandboxes left", n)
	}
	return nil
}

// forEach runs f for every id, 8 at a time, and returns the errors.
func forEach(ids []string, f func(id string) error) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 8)
	)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(id); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// wrapf is nil for a nil err, else err with what was being done.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
