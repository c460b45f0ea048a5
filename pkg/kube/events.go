package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink writes recorded events to the API server: client-go's
// record.EventSink over Interface. Each event goes to its own namespace.
type EventSink struct {
	Client Interface
}

// The recorder's sink has no context; its broadcaster retries on its own
// goroutine, so a call that hangs delays only later events.
func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Create(context.TODO(), e, metav1.CreateOptions{})
}

func (s EventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Update(context.TODO(), e, metav1.UpdateOptions{})
}

func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Patch(context.TODO(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
