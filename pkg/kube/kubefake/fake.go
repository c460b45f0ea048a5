// Package kubefake lets tests use client-go's fake clientset
// (k8s.io/client-go/kubernetes/fake) where nodelet wants a kube.Interface.
// Only tests import it: the product binary never links client-go's
// all-groups clientset.
package kubefake

import (
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/pkg/kube"
)

// Wrap serves kube.Interface from cs.
func Wrap(cs kubernetes.Interface) kube.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) Pods(ns string) kube.PodClient             { return c.cs.CoreV1().Pods(ns) }
func (c clientset) Nodes() kube.NodeClient                    { return c.cs.CoreV1().Nodes() }
func (c clientset) Leases(ns string) kube.LeaseClient         { return c.cs.CoordinationV1().Leases(ns) }
func (c clientset) Events(ns string) kube.EventClient         { return c.cs.CoreV1().Events(ns) }
func (c clientset) ConfigMaps(ns string) kube.ConfigMapClient { return c.cs.CoreV1().ConfigMaps(ns) }
func (c clientset) Secrets(ns string) kube.SecretClient       { return c.cs.CoreV1().Secrets(ns) }
func (c clientset) Services(ns string) kube.ServiceClient     { return c.cs.CoreV1().Services(ns) }
func (c clientset) ServiceAccounts(ns string) kube.TokenRequester {
	return c.cs.CoreV1().ServiceAccounts(ns)
}
func (c clientset) TokenReviews() kube.TokenReviewer { return c.cs.AuthenticationV1().TokenReviews() }
func (c clientset) SubjectAccessReviews() kube.AccessReviewer {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

func (c clientset) RuntimeClasses() kube.RuntimeClassGetter { return c.cs.NodeV1().RuntimeClasses() }
func (c clientset) PersistentVolumeClaims(ns string) kube.PersistentVolumeClaimGetter {
	return c.cs.CoreV1().PersistentVolumeClaims(ns)
}
func (c clientset) PersistentVolumes() kube.PersistentVolumeGetter {
	return c.cs.CoreV1().PersistentVolumes()
}

// IsWatchListSemanticsUnSupported tells informers (cache.ToListWatcherWithWatchListSemantics)
// what the wrapped clientset says: the fake one cannot stream a watch list.
func (c clientset) IsWatchListSemanticsUnSupported() bool {
	w, ok := c.cs.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && w.IsWatchListSemanticsUnSupported()
}
