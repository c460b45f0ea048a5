// Package volumes makes the pod volumes whose content comes from the API
// server: projected volumes (service-account tokens through the TokenRequest
// API, config maps, secrets, downward API fields), such as the
// kube-api-access-* volume the ServiceAccount admission plugin adds to every
// pod.
//
// Everything is read with the node's own credentials, so the Node
// authorizer applies: a node may read a config map or secret, and request a
// token, only for a pod that is bound to it in the API and references the
// object. Static pods are not in that graph; they may use projected volumes
// made only of downward API fields.
//
// The content is written under <root>/pods/<uid>/volumes/kubernetes.io~projected/<volume>
// atomically (AtomicWrite): a reader in the container sees either the old or
// the new set of files, never a mix. A Provider writes it before containers
// start (Prepare) and keeps it current while the pod runs (Run): tokens are
// renewed at 80 % of their lifetime or after 24 h, and config maps and
// secrets are re-read.
package volumes
