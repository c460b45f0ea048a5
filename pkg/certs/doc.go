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
// The behaviour follows upstream's kubelet (read, not copied) and client-go's
// k8s.io/client-go/util/certificate, which is not used: it links client-go's
// clientset, which registers every API group at start-up and would undo
// what pkg/kube saves (docs/BENCHMARKS.md, "RSS"). The CSR client here knows
// only the certificates API; client-go's keyutil, connrotation and rest do
// the rest. The API clients get a transport that presents the current
// certificate in every handshake and whose connections are closed when it
// changes.
package certs
