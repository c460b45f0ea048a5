package config

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/pod"
)

// manifestServer serves whatever the test last set.
type manifestServer struct {
	mu     sync.Mutex
	status int
	body   string
	header http.Header // of the last request
	hits   int
}

func (m *manifestServer) set(status int, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status, m.body = status, body
}

func (m *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.header = r.Header.Clone()
	m.hits++
	w.WriteHeader(m.status)
	_, _ = w.Write([]byte(m.body))
}

func (m *manifestServer) requests() (int, http.Header) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits, m.header
}

func podListYAML(pods ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: PodList\nitems:\n")
	if len(pods) == 0 {
		return "apiVersion: v1\nkind: PodList\nitems: []\n"
	}
	for _, p := range pods {
		b.WriteString("- metadata:\n    name: " + p + "\n  spec:\n    containers:\n    - name: app\n      image: busybox:1.35\n")
	}
	return b.String()
}

func runURLSource(t *testing.T, srv *manifestServer, period time.Duration) (<-chan PodUpdate, *recorder, string) {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	out := make(chan PodUpdate, 100)
	rec := &recorder{}
	s := NewURLSource(ts.URL+"/pods", http.Header{"Authorization": {"Bearer t"}}, "node-1", period, out, WithReporter(rec))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out, rec, ts.URL + "/pods"
}

func expectHTTPSet(t *testing.T, out <-chan PodUpdate, names ...string) []*v1.Pod {
	t.Helper()
	u := next(t, out)
	if u.Op != SET || u.Source != pod.HTTPSource {
		t.Fatalf("got %v from %q, want SET from http", u.Op, u.Source)
	}
	got := []string{}
	for _, p := range u.Pods {
		got = append(got, strings.TrimSuffix(p.Name, "-node-1"))
	}
	slices.Sort(got)
	if names == nil {
		names = []string{}
	}
	if !reflect.DeepEqual(got, names) {
		t.Fatalf("SET of %v, want %v", got, names)
	}
	return u.Pods
}

// waitPolls waits until the server has seen n more requests.
func waitPolls(t *testing.T, srv *manifestServer, n int) {
	t.Helper()
	start, _ := srv.requests()
	poll.Eventually(t, fmt.Sprintf("%d polls", n), func() bool { hits, _ := srv.requests(); return hits >= start+n })
}

// expectEmpty checks that nothing is on ch now. After waitPolls, every poll
// but the last has finished, its update (if any) sent.
func expectEmpty(t *testing.T, ch <-chan PodUpdate) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %v from %q: %v", u.Op, u.Source, uids(u.Pods))
	default:
	}
}

// countingTransport counts the requests it passes on.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestURLSourcePod(t *testing.T) {
	srv := &manifestServer{status: 200, body: podYAML("web", "busybox:1.35")}
	out, rec, url := runURLSource(t, srv, time.Hour) // the first poll is immediate
	pods := expectHTTPSet(t, out, "web")
	p := pods[0]
	if p.Annotations[pod.ConfigSourceAnnotationKey] != "http" || p.Spec.NodeName != "node-1" {
		t.Errorf("not a static pod: %v", p.Annotations)
	}
	uid := StaticPodUID(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, Origin{pod.HTTPSource, url}, "node-1")
	if p.UID != uid || p.Annotations[pod.ConfigHashAnnotationKey] == "" {
		t.Errorf("UID %q, hash %q", p.UID, p.Annotations[pod.ConfigHashAnnotationKey])
	}
	if _, h := srv.requests(); h.Get("Authorization") != "Bearer t" {
		t.Errorf("request header Authorization = %q", h.Get("Authorization"))
	}
	if got := rec.list(); len(got) != 0 {
		t.Errorf("unexpected reports %q", got)
	}
}

func TestURLSourceLifecycle(t *testing.T) {
	srv := &manifestServer{status: 200, body: podListYAML("a", "b")}
	out, rec, url := runURLSource(t, srv, 10*time.Millisecond)
	first := expectHTTPSet(t, out, "a", "b")

	// Unchanged body: polls, but no update.
	waitPolls(t, srv, 3)
	expectEmpty(t, out)

	// A failing server keeps the last set; the problem is reported once.
	srv.set(500, "oops")
	waitPolls(t, srv, 5)
	expectEmpty(t, out)
	if got := rec.list(); len(got) != 1 || got[0] != url+`: GET `+url+`: unexpected status "500 Internal Server Error"` {
		t.Errorf("reports = %q", got)
	}
	// So does a broken body.
	srv.set(200, "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a\n")
	waitPolls(t, srv, 5)
	expectEmpty(t, out)
	if got := rec.waitReports(t, 2); len(got) != 2 || !strings.Contains(got[1], "invalid YAML") {
		t.Errorf("reports = %q", got)
	}
	// And an empty body.
	srv.set(200, "")
	waitPolls(t, srv, 3)
	expectEmpty(t, out)
	if got := rec.waitReports(t, 3); !strings.Contains(got[2], "manifest is empty") {
		t.Errorf("reports = %q", got)
	}

	// Recovery with the same body changes nothing.
	srv.set(200, podListYAML("a", "b"))
	waitPolls(t, srv, 3)
	expectEmpty(t, out)

	// Cosmetic change: same pods, no update.
	srv.set(200, "# comment\n"+podListYAML("a", "b"))
	waitPolls(t, srv, 3)
	expectEmpty(t, out)

	srv.set(200, podListYAML("a", "c"))
	changed := expectHTTPSet(t, out, "a", "c")
	if changed[0].UID != first[0].UID {
		t.Error("unchanged pod a got a new UID")
	}
	srv.set(200, podListYAML())
	expectHTTPSet(t, out)
	if n := len(rec.list()); n != 3 {
		t.Errorf("%d reports, want 3", n)
	}
}

func TestURLSourceNotReadyUntilGoodBody(t *testing.T) {
	srv := &manifestServer{status: 404, body: "not found"}
	out, rec, _ := runURLSource(t, srv, 10*time.Millisecond)
	waitPolls(t, srv, 3)
	expectEmpty(t, out)
	if got := rec.list(); len(got) != 1 || !strings.Contains(got[0], `unexpected status "404 Not Found"`) {
		t.Errorf("reports = %q", got)
	}
	srv.set(200, `{"apiVersion":"v1","kind":"List","items":[]}`)
	expectHTTPSet(t, out)
}

func TestURLSourceRejectsWholeBody(t *testing.T) {
	tests := []struct {
		name, body, err string
	}{
		{"invalid pod in list", podListYAML("a", "B_ad"), `pod 1 ("B_ad"): metadata.name: Invalid value: "B_ad-node-1"`},
		{"duplicate names", podListYAML("a", "a"), "pods 0 and 1 are both named default/a-node-1"},
		{"wrong kind", "apiVersion: v1\nkind: Service\n", `kind "Service" is not supported in a pod manifest, want Pod, PodList or List`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &manifestServer{status: 200, body: tt.body}
			out, rec, _ := runURLSource(t, srv, time.Hour)
			got := rec.waitReports(t, 1)
			if !strings.Contains(got[0], tt.err) {
				t.Errorf("report = %q, want %q", got[0], tt.err)
			}
			expectNone(t, out)
		})
	}
}

func TestURLSourceUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	out := make(chan PodUpdate, 10)
	rec := &recorder{}
	polls := &countingTransport{}
	s := NewURLSource(url, nil, "node-1", 10*time.Millisecond, out, WithReporter(rec), WithHTTPClient(&http.Client{Transport: polls}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	got := rec.waitReports(t, 1)
	// Five more polls fail the same way: still one report.
	after := polls.n.Load()
	poll.Eventually(t, "5 more polls", func() bool { return polls.n.Load() >= after+5 })
	cancel()
	<-done
	if n := len(rec.list()); n != 1 {
		t.Errorf("%d reports for the same error, want 1: %q", n, rec.list())
	}
	if !strings.Contains(got[0], "connection refused") {
		t.Errorf("report = %q", got[0])
	}
	if len(out) != 0 {
		t.Errorf("%d updates from an unreachable URL", len(out))
	}
}
