package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const idLabel = "bench.nodelet.dev/id"

// agent is a node agent under test (upstream kubelet or nodelet), run standalone on a static pod
// manifest directory and observed only from outside: its read-only /pods and /proc.
type agent struct {
	name        string
	manifestDir string
	rootDir     string
	logFile     string
	readOnly    string // base URL of the read-only server
	cmd         *exec.Cmd
	exited      chan struct{}
	http        *http.Client
}

func newAgent(name, stateDir string, readOnlyPort int) (*agent, error) {
	a := &agent{
		name:        name,
		manifestDir: filepath.Join(stateDir, "manifests"),
		rootDir:     filepath.Join(stateDir, "root"),
		logFile:     filepath.Join(stateDir, name+".log"),
		readOnly:    fmt.Sprintf("http://127.0.0.1:%d", readOnlyPort),
		http:        &http.Client{Timeout: 5 * time.Second},
	}
	for _, d := range []string{a.manifestDir, a.rootDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// start runs argv and waits until the read-only server answers /pods.
func (a *agent) start(ctx context.Context, argv []string, timeout time.Duration) (time.Duration, error) {
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(a.readOnly, "http://"), time.Second); err == nil {
		c.Close()
		return 0, fmt.Errorf("%s is already served by another process; stop it first", a.readOnly)
	}
	begin, err := a.launch(argv)
	if err != nil {
		return 0, err
	}

	deadline := time.Now().Add(timeout)
	for {
		if _, err := a.pods(ctx); err == nil {
			return time.Since(begin), nil
		}
		select {
		case <-a.exited:
			return 0, fmt.Errorf("%s exited during start-up (%s); see %s:\n%s", a.name, a.cmd.ProcessState, a.logFile, tail(a.logFile, 15))
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: read-only /pods not answering after %s; see %s:\n%s", a.name, timeout, a.logFile, tail(a.logFile, 15))
		}
	}
}

// launch starts argv with its output in the agent's log file and returns when it was started.
func (a *agent) launch(argv []string) (time.Time, error) {
	logf, err := os.Create(a.logFile)
	if err != nil {
		return time.Time{}, err
	}
	a.cmd = exec.Command(argv[0], argv[1:]...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	begin := time.Now()
	if err := a.cmd.Start(); err != nil {
		logf.Close()
		return time.Time{}, fmt.Errorf("start %s: %w", argv[0], err)
	}
	a.exited = make(chan struct{})
	go func() { _ = a.cmd.Wait(); logf.Close(); close(a.exited) }()
	return begin, nil
}

func (a *agent) pid() int {
	if a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	return a.cmd.Process.Pid
}

func (a *agent) alive() bool {
	if a.exited == nil {
		return false
	}
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the agent's process group, then SIGKILL after the grace period.
func (a *agent) stop(grace time.Duration) {
	if !a.alive() {
		return
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
	}
}

// writeManifest writes a hostNetwork busybox pod atomically: a hidden temp file renamed into
// place, so no agent ever reads half a file (both agents ignore dot files).
func (a *agent) writeManifest(id string) error {
	return a.writePod(id, benchPod(id))
}

// writePod writes pod's manifest as id.yaml, atomically.
func (a *agent) writePod(id string, pod *v1.Pod) error {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	tmp := filepath.Join(a.manifestDir, "."+id+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(a.manifestDir, id+".yaml"))
}

func benchPod(id string) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "bench-" + id,
			Namespace: "default",
			Labels:    map[string]string{idLabel: id},
		},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name:            "c",
				Image:           busyboxImage,
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         []string{"sleep", "3600"},
			}},
		},
	}
}

// podList is the part of the read-only /pods answer the benchmark reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			ContainerStatuses []struct {
				State struct {
					Running *struct{} `json:"running"`
				} `json:"state"`
			} `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

// pods returns the set of bench ids whose containers are all running, per /pods.
func (a *agent) pods(ctx context.Context) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.readOnly+"/pods", nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: %s", resp.Status)
	}
	var pl podList
	if err := json.NewDecoder(resp.Body).Decode(&pl); err != nil {
		return nil, fmt.Errorf("GET /pods: %w", err)
	}
	running := map[string]bool{}
	for _, p := range pl.Items {
		id := p.Metadata.Labels[idLabel]
		if id == "" || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		all := true
		for _, cs := range p.Status.ContainerStatuses {
			all = all && cs.State.Running != nil
		}
		if all {
			running[id] = true
		}
	}
	return running, nil
}

// waitRunning polls /pods every interval until every id is running.
func (a *agent) waitRunning(ctx context.Context, ids []string, interval, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		running, err := a.pods(ctx)
		if err == nil {
			missing := 0
			for _, id := range ids {
				if !running[id] {
					missing++
				}
			}
			if missing == 0 {
				return nil
			}
			lastErr = fmt.Errorf("%d of %d pods not running", missing, len(ids))
		} else {
			lastErr = err
		}
		if !a.alive() {
			return fmt.Errorf("%s exited; see %s:\n%s", a.name, a.logFile, tail(a.logFile, 15))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: timed out after %s: %v", a.name, timeout, lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// procMem is a process's memory as /proc/PID/status reports it, in KiB.
type procMem struct {
	rss, hwm int64
	// anon is the anonymous part of rss (heap, stacks); the rest is mostly
	// the pages of the executable it touched, shared with the page cache.
	anon int64
}

// readProcMem reads VmRSS, VmHWM and RssAnon from /proc/PID/status.
func readProcMem(pid int) (procMem, error) {
	var m procMem
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = v
		case "VmHWM:":
			m.hwm = v
		case "RssAnon:":
			m.anon = v
		}
	}
	if m.rss == 0 {
		return m, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return m, nil
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// procCPU returns utime+stime of PID in seconds, from /proc/PID/stat.
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed utime/stime in /proc/PID/stat")
	}
	return float64(ut+st) / clockTicks, nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// scrape GETs path from the read-only server as Prometheus does (text format, gzip offered) and
// returns the size of the body as sent.
func (a *agent) scrape(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.readOnly+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return int(n), nil
}
