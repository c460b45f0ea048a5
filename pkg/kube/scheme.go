package kube

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows the API groups nodelet talks to, and nothing else.
var Scheme = runtime.NewScheme()

// Codecs and ParameterCodec serve Scheme.
var (
	Codecs         = serializer.NewCodecFactory(Scheme)
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

// groups are the API groups in Scheme.
var groups = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	coordinationv1.AddToScheme,
	authenticationv1.AddToScheme,
	authorizationv1.AddToScheme,
	nodev1.AddToScheme,
}

func init() {
	// Options types (ListOptions, DeleteOptions, ...) for the core group,
	// as client-go's scheme registers them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range groups {
		utilruntime.Must(add(Scheme))
	}
}
