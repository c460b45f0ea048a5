package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func httptestRequest(method, target, body string) *http.Request {
	return httptest.NewRequest(method, target, strings.NewReader(body))
}

func TestDebugEndpoints(t *testing.T) {
	dir := t.TempDir()
	var asked []string
	d := newFakeNode().deps()
	d.Configz = func() *kubeletconfigv1beta1.KubeletConfiguration {
		return &kubeletconfigv1beta1.KubeletConfiguration{MaxPods: 42}
	}
	d.Profiling = true
	d.RunningPods = func(context.Context) ([]*v1.Pod, error) {
		return []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.35"}}}}}, nil
	}
	d.CheckpointDir = filepath.Join(dir, "checkpoints")
	d.Checkpoint = func(_ context.Context, id, location string, timeout time.Duration) error {
		asked = append(asked, fmt.Sprintf("%s %s %s", id, location, timeout))
		if strings.Contains(location, "idle") {
			return fmt.Errorf("rpc Unimplemented: %w", ErrUnsupported)
		}
		return nil
	}
	var level int
	d.SetVerbosity = func(l int) error {
		if l < 0 {
			return fmt.Errorf("must be 0 or more")
		}
		level = l
		return nil
	}
	h := APIRoutes(d)
	for _, tc := range []struct {
		method, target string
		code           int
		body           string
	}{
		{"GET", "/configz", 200, `{"kubeletconfig":{`},
		{"GET", "/configz", 200, `"maxPods":42`},
		{"GET", "/runningpods/", 200, `"kind":"PodList"`},
		{"GET", "/runningpods/", 200, `"image":"busybox:1.35"`},
		{"GET", "/debug/pprof/", 200, "goroutine"},
		{"GET", "/debug/pprof/goroutine?debug=1", 200, "goroutine profile"},
		{"POST", "/checkpoint/default/web-node-a/app", 200, `{"items":["` + d.CheckpointDir + `/checkpoint-web-node-a_default-app-`},
		{"POST", "/checkpoint/default/web-node-a/app?timeout=7", 200, `.tar"]}`},
		{"POST", "/checkpoint/default/web-node-a/app?timeout=x", 400, "positive number of seconds"},
		{"POST", "/checkpoint/prod/api/app", 400, "not running"},
		{"POST", "/checkpoint/prod/nope/app", 404, ""},
		{"GET", "/checkpoint/default/web-node-a/app", 405, ""},
	} {
		code, body := get(t, h, tc.method, tc.target)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %.300q, want %d containing %q", tc.method, tc.target, code, body, tc.code, tc.body)
		}
	}
	if len(asked) != 2 || !regexp.MustCompile(`^app-2 .*/checkpoint-web-node-a_default-app-[0-9T:Z+-]+\.tar 0s$`).MatchString(asked[0]) ||
		!strings.HasSuffix(asked[1], " 7s") {
		t.Errorf("checkpoint calls %q", asked)
	}

	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{"4\n", 200, "successfully set klog.logging.verbosity to 4"},
		{"-1", 400, "must be 0 or more"},
		{"loud", 400, "want a number"},
	} {
		rec := newRecorder()
		h.ServeHTTP(rec, httptestRequest("PUT", "/debug/flags/v", tc.body))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("PUT /debug/flags/v %q: %d %q", tc.body, rec.Code, rec.Body.String())
		}
	}
	if level != 4 {
		t.Errorf("verbosity %d, want 4", level)
	}

	// A runtime without checkpointing: 501 with the reason.
	d.FindPod = func(ns, name string) (*v1.Pod, bool) {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idle", UID: "static-uid"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}, true
	}
	if code, body := get(t, APIRoutes(d), "POST", "/checkpoint/default/idle/app"); code != 501 || !strings.Contains(body, "not supported by the container runtime") {
		t.Errorf("unsupported checkpoint: %d %q", code, body)
	}

	// Off: no profiles, and no debugging handlers at all.
	d.Profiling = false
	off := APIRoutes(d.WithoutDebuggingHandlers())
	for _, target := range []string{"/debug/pprof/", "/runningpods/"} {
		if code, _ := get(t, off, "GET", target); code == 200 {
			t.Errorf("GET %s served with the handler off", target)
		}
	}
}
