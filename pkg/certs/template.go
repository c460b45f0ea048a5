package certs

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Names of the certificate files in --cert-dir, as upstream and kubeadm
// expect them: <prefix>-current.pem is the symlink to the newest pair.
const (
	ClientPairPrefix  = "kubelet-client"
	ServingPairPrefix = "kubelet-server"
)

// nodesGroup is the group node credentials carry; the Node authorizer and
// NodeRestriction admission recognise a node by it and by the user name.
const nodesGroup = "system:nodes"

// NodeUser is the user name of a node's credential.
func NodeUser(nodeName string) string { return "system:node:" + nodeName }

// ClientTemplate is the subject of the client certificate requested for
// nodeName: CN=system:node:<name>, O=system:nodes, which the
// kube-apiserver-client-kubelet signer and its approver require.
func ClientTemplate(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: NodeUser(nodeName), Organization: []string{nodesGroup}},
	}
}

// ServingTemplate is the serving certificate request for nodeName with the
// node's addresses as subject alternative names, or nil when there is no
// address to put in it yet (the certificate manager then waits).
func ServingTemplate(nodeName string, addrs []v1.NodeAddress) *x509.CertificateRequest {
	dns, ips := ServingSANs(addrs)
	if len(dns) == 0 && len(ips) == 0 {
		return nil
	}
	return &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: NodeUser(nodeName), Organization: []string{nodesGroup}},
		DNSNames:    dns,
		IPAddresses: ips,
	}
}

// ServingSANs sorts node addresses into DNS names and IPs as upstream does:
// Hostname, InternalDNS and ExternalDNS are names, InternalIP and ExternalIP
// addresses; duplicates and IPs that do not parse are dropped, order kept.
// The kubelet-serving signer's approvers check exactly these against the
// Node object, so nothing else (localhost, loopback) is added.
func ServingSANs(addrs []v1.NodeAddress) (dns []string, ips []net.IP) {
	for _, a := range addrs {
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			if a.Address != "" && !slices.Contains(dns, a.Address) {
				dns = append(dns, a.Address)
			}
		case v1.NodeInternalIP, v1.NodeExternalIP:
			ip := net.ParseIP(a.Address)
			if ip == nil || slices.ContainsFunc(ips, ip.Equal) {
				continue
			}
			ips = append(ips, ip)
		}
	}
	return dns, ips
}

// NodeAddresses lists a node's addresses as nodelet reports them on the
// Node: each IP as InternalIP, then the hostname.
func NodeAddresses(hostname string, ips []string) []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range ips {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	if hostname != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
	}
	return out
}

// errNoServingCert is what a TLS handshake fails with before the serving
// certificate was issued: upstream serves the port and fails handshakes the
// same way instead of falling back to a self-signed certificate.
var errNoServingCert = fmt.Errorf("no serving certificate available for the kubelet: the kubernetes.io/kubelet-serving CSR is not approved and issued yet")
