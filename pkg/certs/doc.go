// Package certs gets and keeps nodelet's certificates from the cluster, as
// upstream's TLS bootstrapping does:
//
//   - the client certificate nodelet authenticates to the API server with:
//     when --kubeconfig holds no usable one and a --bootstrap-kubeconfig is
//     given, a kubernetes.io/kube-apiserver-client-kubelet CSR is made with
//     the bootstrap credential, the issued certificate is stored in
//     <cert-dir>/kubelet-client-<timestamp>.pem (key and certificate in one
//     file) behind the kubelet-client-current.pem symlink, and the kubeconfig
//     is written to point at that symlink; with rotateCertificates it is
//     renewed at a jittered 70-90 % of its lifetime;
//   - with serverTLSBootstrap, the node API's serving certificate
//     (kubernetes.io/kubelet-serving, the node's names and addresses as SANs),
//     stored as kubelet-server-current.pem and renewed the same way.
//
// The requesting, storing and rotating is client-go's
// (k8s.io/client-go/util/certificate); this package decides what to ask for
// and when the existing credential will do, and gives the API clients a
// transport that always presents the current certificate.
package certs
