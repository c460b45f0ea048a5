package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/pkg/logs"
)

func testPod(name string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.35"}}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

func TestReadOnlyPods(t *testing.T) {
	web, job := testPod("web", v1.PodRunning), testPod("job", v1.PodSucceeded)
	tests := []struct {
		name      string
		pods      func() []*v1.Pod
		wantCode  int
		wantNames []string
	}{
		{"pods with status", func() []*v1.Pod { return []*v1.Pod{web, nil, job} }, 200, []string{"web", "job"}},
		{"no pods", func() []*v1.Pod { return nil }, 200, []string{}},
		{"nil dependency", nil, 501, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(ReadOnlyHandler(APIDeps{Pods: tc.pods}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/pods")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code = %d, want %d (body %q)", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode != 200 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			// The raw shape matters to jq users: kind, apiVersion, items never null.
			var raw map[string]any
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatal(err)
			}
			if raw["kind"] != "PodList" || raw["apiVersion"] != "v1" {
				t.Errorf("kind/apiVersion = %v/%v", raw["kind"], raw["apiVersion"])
			}
			if _, ok := raw["items"].([]any); !ok {
				t.Errorf("items = %#v, want an array", raw["items"])
			}
			var list v1.PodList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, p := range list.Items {
				names = append(names, p.Name)
				if p.Kind != "" || p.APIVersion != "" {
					t.Errorf("item %s has TypeMeta %v, want none", p.Name, p.TypeMeta)
				}
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("names = %v, want %v", names, tc.wantNames)
			}
			if len(list.Items) == 2 && list.Items[1].Status.Phase != v1.PodSucceeded {
				t.Errorf("status not carried: %v", list.Items[1].Status)
			}
		})
	}
	if web.Kind != "Pod" {
		t.Error("handler modified the caller's pod")
	}
}

func TestReadOnlyRoutes(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	// Every dependency set: what the read-only port leaves out, it leaves
	// out by route, not because something is missing.
	h := ReadOnlyHandler(APIDeps{
		Pods:    func() []*v1.Pod { return nil },
		Metrics: ok, ResourceMetrics: ok, ProbeMetrics: ok, CadvisorMetrics: ok,
		Exec:      func(context.Context, *runtimeapi.ExecRequest) (string, error) { return "http://127.0.0.1:1", nil },
		ReadLogs:  func(context.Context, string, string, logs.Options, io.Writer, io.Writer) error { return nil },
		Configz:   func() *kubeletconfigv1beta1.KubeletConfiguration { return &kubeletconfigv1beta1.KubeletConfiguration{} },
		Profiling: true,
	})
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/healthz/ping", 200},
		{"GET", "/pods", 200},
		{"DELETE", "/pods", 405},
		{"GET", "/spec", 404},
		// Upstream's default handlers: metrics and stats, unauthenticated.
		{"GET", "/metrics", 200},
		{"GET", "/metrics/cadvisor", 200},
		{"GET", "/metrics/resource", 200},
		{"GET", "/metrics/probes", 200},
		{"GET", "/stats/summary", 501}, // no Summary in these deps
		// Nothing that acts on a pod or debugs the node.
		{"GET", "/containerLogs/default/web/c", 404},
		{"POST", "/exec/default/web/c", 404},
		{"GET", "/configz", 404},
		{"GET", "/debug/pprof/", 404},
		{"GET", "/logs/", 404},
		{"GET", "/runningpods/", 404},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
}

// TestCachedPods: the list is encoded once per version, and a new version
// shows the new pods.
func TestCachedPods(t *testing.T) {
	var version uint64
	calls := 0
	current := []*v1.Pod{testPod("a", v1.PodPending)}
	h := CachedPodsHandler(func() []*v1.Pod { calls++; return current }, func() uint64 { return version })
	get := func() v1.PodList {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/pods", nil))
		if rec.Code != 200 {
			t.Fatalf("code = %d", rec.Code)
		}
		var list v1.PodList
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		return list
	}
	steps := []struct {
		name      string
		change    func()
		wantPhase v1.PodPhase
		wantCalls int
	}{
		{"first request encodes", func() {}, v1.PodPending, 1},
		{"same version reuses", func() { current = []*v1.Pod{testPod("a", v1.PodRunning)} }, v1.PodPending, 1},
		{"new version re-encodes", func() { version++ }, v1.PodRunning, 2},
		{"and is reused again", func() {}, v1.PodRunning, 2},
	}
	for _, s := range steps {
		s.change()
		list := get()
		if len(list.Items) != 1 || list.Items[0].Status.Phase != s.wantPhase || calls != s.wantCalls {
			t.Errorf("%s: items %d, phase %q, calls %d; want 1, %q, %d",
				s.name, len(list.Items), list.Items[0].Status.Phase, calls, s.wantPhase, s.wantCalls)
		}
	}
}
