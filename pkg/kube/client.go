package kube

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// ResourceClient is the part of a typed client nodelet uses for a resource
// with objects T and lists L. client-go's generated typed clients (and so
// its fake clientset) have the same methods.
type ResourceClient[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// The resources nodelet reads and writes.
type (
	PodClient       = ResourceClient[*corev1.Pod, *corev1.PodList]
	NodeClient      = ResourceClient[*corev1.Node, *corev1.NodeList]
	LeaseClient     = ResourceClient[*coordinationv1.Lease, *coordinationv1.LeaseList]
	EventClient     = ResourceClient[*corev1.Event, *corev1.EventList]
	ConfigMapClient = ResourceClient[*corev1.ConfigMap, *corev1.ConfigMapList]
	SecretClient    = ResourceClient[*corev1.Secret, *corev1.SecretList]
	ServiceClient   = ResourceClient[*corev1.Service, *corev1.ServiceList]
)

// TokenRequester asks for service-account tokens (the serviceaccounts/token
// subresource).
type TokenRequester interface {
	CreateToken(ctx context.Context, serviceAccount string, req *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// TokenReviewer checks bearer tokens.
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// AccessReviewer asks whether a user may do something.
type AccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// RuntimeClassGetter reads RuntimeClasses (node.k8s.io/v1), which map a
// pod's runtimeClassName to a CRI runtime handler.
type RuntimeClassGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*nodev1.RuntimeClass, error)
}

// PersistentVolumeClaimGetter reads PersistentVolumeClaims, which a pod's
// persistentVolumeClaim volumes name.
type PersistentVolumeClaimGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
}

// PersistentVolumeGetter reads PersistentVolumes, what a bound claim names.
type PersistentVolumeGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolume, error)
}

// Interface is the API as nodelet sees it. namespace "" means all
// namespaces where that makes sense (lists and watches).
type Interface interface {
	Pods(namespace string) PodClient
	Nodes() NodeClient
	Leases(namespace string) LeaseClient
	Events(namespace string) EventClient
	ConfigMaps(namespace string) ConfigMapClient
	Secrets(namespace string) SecretClient
	Services(namespace string) ServiceClient
	ServiceAccounts(namespace string) TokenRequester
	TokenReviews() TokenReviewer
	SubjectAccessReviews() AccessReviewer
	RuntimeClasses() RuntimeClassGetter
	PersistentVolumeClaims(namespace string) PersistentVolumeClaimGetter
	PersistentVolumes() PersistentVolumeGetter
}

// Clientset is Interface over HTTP.
type Clientset struct {
	core, coordination, authentication, authorization rest.Interface
	node                                              rest.Interface
}

var _ Interface = (*Clientset)(nil)

// NewForConfig builds a Clientset from c, which it does not modify. As
// client-go's clientset, all groups share one HTTP client and one rate
// limiter (c.QPS and c.Burst; QPS < 0 means none).
func NewForConfig(c *rest.Config) (*Clientset, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("API client: burst must be > 0 when QPS (%v) is set", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	var cs Clientset
	for _, g := range []struct {
		into *rest.Interface
		gv   schema.GroupVersion
	}{
		{&cs.core, corev1.SchemeGroupVersion},
		{&cs.coordination, coordinationv1.SchemeGroupVersion},
		{&cs.authentication, authenticationv1.SchemeGroupVersion},
		{&cs.authorization, authorizationv1.SchemeGroupVersion},
		{&cs.node, nodev1.SchemeGroupVersion},
	} {
		rc, err := restClient(cfg, g.gv, httpClient)
		if err != nil {
			return nil, fmt.Errorf("API client for %s: %w", g.gv, err)
		}
		*g.into = rc
	}
	return &cs, nil
}

func restClient(cfg rest.Config, gv schema.GroupVersion, httpClient *http.Client) (*rest.RESTClient, error) {
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&cfg, httpClient)
}

func resource[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](c rest.Interface, name, namespace string, newObj func() T, newList func() L) ResourceClient[T, L] {
	return gentype.NewClientWithList(name, c, ParameterCodec, namespace, newObj, newList, gentype.PrefersProtobuf[T]())
}

func (c *Clientset) Pods(namespace string) PodClient {
	return resource(c.core, "pods", namespace, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

func (c *Clientset) Nodes() NodeClient {
	return resource(c.core, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (c *Clientset) Leases(namespace string) LeaseClient {
	return resource(c.coordination, "leases", namespace, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

func (c *Clientset) Events(namespace string) EventClient {
	return resource(c.core, "events", namespace, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

func (c *Clientset) ConfigMaps(namespace string) ConfigMapClient {
	return resource(c.core, "configmaps", namespace, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c *Clientset) Secrets(namespace string) SecretClient {
	return resource(c.core, "secrets", namespace, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (c *Clientset) Services(namespace string) ServiceClient {
	return resource(c.core, "services", namespace, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

func (c *Clientset) ServiceAccounts(namespace string) TokenRequester {
	return tokenRequester{client: c.core, namespace: namespace}
}

func (c *Clientset) TokenReviews() TokenReviewer {
	return gentype.NewClient("tokenreviews", c.authentication, ParameterCodec, "",
		func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} },
		gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

func (c *Clientset) SubjectAccessReviews() AccessReviewer {
	return gentype.NewClient("subjectaccessreviews", c.authorization, ParameterCodec, "",
		func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} },
		gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

func (c *Clientset) RuntimeClasses() RuntimeClassGetter {
	return resource(c.node, "runtimeclasses", "", func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} }, func() *nodev1.RuntimeClassList { return &nodev1.RuntimeClassList{} })
}

func (c *Clientset) PersistentVolumeClaims(namespace string) PersistentVolumeClaimGetter {
	return resource(c.core, "persistentvolumeclaims", namespace, func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} })
}

func (c *Clientset) PersistentVolumes() PersistentVolumeGetter {
	return resource(c.core, "persistentvolumes", "", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

type tokenRequester struct {
	client    rest.Interface
	namespace string
}

func (t tokenRequester) CreateToken(ctx context.Context, serviceAccount string, req *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	result := &authenticationv1.TokenRequest{}
	err := t.client.Post().
		UseProtobufAsDefault().
		Namespace(t.namespace).
		Resource("serviceaccounts").
		Name(serviceAccount).
		SubResource("token").
		VersionedParams(&opts, ParameterCodec).
		Body(req).
		Do(ctx).
		Into(result)
	return result, err
}
