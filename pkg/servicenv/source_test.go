package servicenv

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
)

// An API pod waits for the first list; Run returns once the informer
// stopped.
func TestSourceRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewClientset(svc("default", "kubernetes", "10.0.0.1", v1.ServicePort{Port: 443}))
	s := NewSource(kubefake.Wrap(client))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if _, err := s.PodVars(pod); err == nil {
		t.Fatal("PodVars before the first list worked")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Run(ctx) }()
	poll.Eventually(t, "the first list", func() bool {
		vars, err := s.PodVars(pod)
		return err == nil && vars["KUBERNETES_SERVICE_HOST"] == "10.0.0.1"
	})
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
}
