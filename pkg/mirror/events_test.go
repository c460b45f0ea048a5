package mirror

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/pod"
)

// recordOne records one event about obj through a real client-go recorder
// wrapped in EventRecorder, and returns the event as the API server gets it.
func recordOne(t *testing.T, pods *pod.Manager, obj runtime.Object) *v1.Event {
	t.Helper()
	b := record.NewBroadcaster()
	defer b.Shutdown()
	got := make(chan *v1.Event, 1)
	w := b.StartEventWatcher(func(e *v1.Event) { got <- e })
	defer w.Stop()
	rec := NewEventRecorder(b.NewRecorder(kube.Scheme, v1.EventSource{Component: "nodelet"}), pods)
	rec.Eventf(obj, v1.EventTypeNormal, "Started", "Started container %s", "c")
	select {
	case e := <-got:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

func TestEventRecorderTargetsWhatDescribeOfTheMirrorSelects(t *testing.T) {
	static := staticPod("s1", "h1")
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "a1",
		Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.ApiserverSource}}}
	mirror := Build(static, "node1", "n-uid")
	mirror.UID = "m1"
	pods := pod.NewManager()
	pods.AddOrUpdatePod(static)
	pods.AddOrUpdatePod(apiPod)

	tests := []struct {
		name     string
		object   runtime.Object
		wantUID  types.UID
		wantName string
		wantPath string
	}{
		// kubectl describe pod <mirror> selects involvedObject.uid = the
		// mirror's config.mirror annotation.
		{name: "static pod", object: static, wantUID: types.UID(mirror.Annotations[pod.ConfigMirrorAnnotationKey]), wantName: mirror.Name},
		{name: "API pod untouched", object: apiPod, wantUID: "a1", wantName: "api"},
		{name: "container of a static pod",
			object:  &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: static.Name, UID: "s1", FieldPath: "spec.containers{c}"},
			wantUID: "h1", wantName: mirror.Name, wantPath: "spec.containers{c}"},
		{name: "reference to an unknown pod untouched",
			object:  &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "x", UID: "x1"},
			wantUID: "x1", wantName: "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := recordOne(t, pods, tc.object)
			io := e.InvolvedObject
			if io.UID != tc.wantUID || io.Name != tc.wantName || io.FieldPath != tc.wantPath || io.Kind != "Pod" || io.Namespace != "default" {
				t.Fatalf("involved object = %+v, want UID %s name %s path %q", io, tc.wantUID, tc.wantName, tc.wantPath)
			}
			if e.Namespace != "default" {
				t.Errorf("event namespace %q", e.Namespace)
			}
		})
	}
}

func TestEventRef(t *testing.T) {
	noHash := staticPod("s1", "")
	if EventRef(noHash) != nil {
		t.Error("a static pod without a config hash has no mirror to show its events")
	}
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "a1",
		Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.ApiserverSource, pod.ConfigHashAnnotationKey: "h"}}}
	if EventRef(api) != nil {
		t.Error("an API pod's events are redirected")
	}
}
