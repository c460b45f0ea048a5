// Package servicenv gives containers the service environment variables
// upstream's kubelet gives them: KUBERNETES_SERVICE_HOST / _PORT and the
// KUBERNETES_PORT_* family of the API server's "kubernetes" service in the
// default namespace for every pod, and the same docker-link variables of
// every service in the pod's own namespace unless the pod sets
// enableServiceLinks: false.
//
// The services come from one informer over all namespaces (the Node
// authorizer lets a node list and watch services). Until it has synced a
// container cannot start: its environment would silently lack variables.
package servicenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelet/nodelet/pkg/kube"
	podpkg "github.com/nodelet/nodelet/pkg/pod"
)

// masterService is the service every pod gets the variables of.
const masterService = "kubernetes"

// Vars returns the service variables of a pod in namespace ns, given all
// services of the cluster, as upstream computes them.
func Vars(services []*v1.Service, ns string, links bool) map[string]string {
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if !ipSet(s) || len(s.Spec.Ports) == 0 {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			// Always, even without service links; a service of the
			// same name in the pod's own namespace wins, as upstream.
			if _, taken := chosen[s.Name]; !taken {
				chosen[s.Name] = s
			}
		case s.Namespace == ns && links:
			chosen[s.Name] = s
		}
	}
	out := map[string]string{}
	for _, s := range chosen {
		addService(out, s)
	}
	return out
}

func ipSet(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// addService adds one service's variables: <NAME>_SERVICE_HOST,
// _SERVICE_PORT (first port) and _SERVICE_PORT_<PORTNAME>, and the docker
// link variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR].
func addService(out map[string]string, s *v1.Service) {
	prefix := envName(s.Name)
	ip := s.Spec.ClusterIP
	out[prefix+"_SERVICE_HOST"] = ip
	out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			out[prefix+"_SERVICE_PORT_"+envName(p.Name)] = port
		}
		proto := string(v1.ProtocolTCP)
		if p.Protocol != "" {
			proto = string(p.Protocol)
		}
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out[prefix+"_PORT"] = url
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out[pp] = url
		out[pp+"_PROTO"] = strings.ToLower(proto)
		out[pp+"_PORT"] = port
		out[pp+"_ADDR"] = ip
	}
}

func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

// Source keeps the cluster's services from an informer.
type Source struct {
	store  cache.Store
	ctrl   cache.Controller
	synced func() bool
}

// NewSource returns a Source over client's services; Run starts it.
func NewSource(client kube.Interface) *Source {
	c := client.Services(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, o)
		},
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    &v1.Service{},
		Handler:       cache.ResourceEventHandlerFuncs{},
	})
	return &Source{store: store, ctrl: ctrl, synced: ctrl.HasSynced}
}

// Run feeds the Source until ctx is done. It returns once the informer
// (which waits for its own reflector) has stopped.
func (s *Source) Run(ctx context.Context) error {
	s.ctrl.RunWithContext(ctx)
	return nil
}

// errNotSynced: upstream does not start a container before it has read
// the services once either.
var errNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// PodVars returns the service variables of pod's containers. Before the
// first list an API pod waits; a static pod starts with what is known (it
// must run while the API server is away).
func (s *Source) PodVars(pod *v1.Pod) (map[string]string, error) {
	if !s.synced() && !podpkg.IsStatic(pod) {
		return nil, errNotSynced
	}
	objs := s.store.List()
	services := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		services = append(services, o.(*v1.Service))
	}
	// Stable input order: equal names in two namespaces resolve alike.
	sort.Slice(services, func(i, j int) bool { return services[i].Namespace < services[j].Namespace })
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return Vars(services, pod.Namespace, links), nil
}
