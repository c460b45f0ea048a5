// Package pullsecrets turns a pod's image pull secrets into the registry
// credentials to try for one image, with upstream's rules (read from
// k8s.io/kubernetes pkg/credentialprovider for behaviour, not copied):
//
//   - a secret of type kubernetes.io/dockerconfigjson (key .dockerconfigjson,
//     {"auths": {...}}) or kubernetes.io/dockercfg (key .dockercfg, the bare
//     map) contributes one entry per registry key; an entry's "auth"
//     (base64 of user:password) wins over its username and password;
//     secrets of other types are ignored, as upstream ignores them;
//   - a key matches an image's repository when the host has as many
//     dot-separated parts, each matching as a glob ("*.example.com"), the
//     ports are equal and the key's path is a prefix of the repository's
//     path; a leading scheme and a /v1/ or /v2/ path are dropped;
//   - every matching credential is returned, the most specific key first
//     (keys sorted in reverse), credentials of one key in secret order; the
//     puller tries them in that order until one pull succeeds;
//   - when no key matches, a Docker Hub image gets the credentials of
//     index.docker.io.
//
// Secret content is hostile: a secret that does not parse gives an error
// naming the secret and what is wrong with it, never its content. A
// Credential never prints its username or password.
//
// The keyring is hand-written on purpose: upstream's is in k8s.io/kubernetes,
// which nodelet must not import (and which would undo a small binary: nodelet
// links neither it nor client-go's full clientset, whose removal alone took
// the binary from 91 MB to 44 MB).
package pullsecrets
