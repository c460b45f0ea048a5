// Package volumes makes pod volumes on the node, one Plugin per volume
// type (plugin.go): emptyDir (emptydir.go) and hostPath (hostpath.go), which
// the node makes by itself, and the four types whose content comes from the
// API server or the pod itself (apiplugins.go), which share a Provider.
// The rest of this package is about those: configMap, secret, downwardAPI
// and projected volumes
// (service-account tokens through the TokenRequest API, config maps,
// secrets, downward API fields), such as the kube-api-access-* volume the
// ServiceAccount admission plugin adds to every pod. A plain configMap,
// secret or downwardAPI volume is rendered as a projection with one source,
// so all four share items, paths, modes and optional handling.
//
// Everything is read with the node's own credentials, so the Node
// authorizer applies: a node may read a config map or secret, and request a
// token, only for a pod that is bound to it in the API and references the
// object. Static pods are not in that graph; they may use downward API
// fields only, and are refused API objects as upstream refuses them.
//
// Each volume is a tmpfs mounted at
// <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<volume> (plugin secret,
// configmap, downward-api or projected; config maps are on tmpfs too, unlike
// upstream, so nothing of any of them reaches the node's disk), below a
// plugin directory only root may enter. The content is written atomically
// (AtomicWrite): a reader in the container sees either the old or the new
// set of files, never a mix. A Provider writes it before containers start
// (Prepare) and keeps it current while the pod runs (Run): every config map
// and secret a pod references is watched on its own (package objects, whose
// watcher the Provider runs and shares with env vars), a change rewrites the volumes of
// the pods using it within a second and wakes those pods (a pod waiting for
// a missing object starts as soon as it exists); tokens are renewed at 80 %
// of their lifetime or after 24 h. Downward API files (metadata fields, and
// container resources through criconfig.ResourceFieldValue, the function env vars
// use) are rewritten by the Prepare of the sync that a pod update causes
// when its labels, annotations or resources changed. The plugins' TearDown
// (Registry.TearDown) and Provider.Teardown unmount a removed pod's tmpfs.
package volumes
