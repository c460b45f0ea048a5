package criconfig

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The names a pod sees: its hostname (spec.hostname or its name), its
// domain with a subdomain, the kernel hostname (the FQDN with
// setHostnameAsFQDN), and the /etc/hosts nodelet manages for it, as
// upstream: written to <root>/pods/<uid>/etc-hosts and mounted read-write
// at /etc/hosts in every container that does not mount something there
// itself. A pod on the pod network gets the localhost entries and its own
// IPs with its hostname (and FQDN with a subdomain); a host-network pod
// gets the node's hosts file. Both get their hostAliases appended.

const etcHostsPath = "/etc/hosts"

const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
	// maxKernelHostname is the longest name sethostname(2) takes.
	maxKernelHostname = 64
)

// PodHostnameAndDomain returns a pod's hostname (spec.hostname or its name,
// cut to one DNS label) and, with a subdomain, its domain
// <subdomain>.<namespace>.svc.<clusterDomain>. A hostname or subdomain
// that is no DNS label is an error, as upstream's.
//
// spec.hostnameOverride, when set, is the hostname as given (a DNS
// subdomain, cut to what a kernel hostname may hold) and the pod has no
// domain, as upstream: it replaces hostname and subdomain.
func PodHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostName, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod hostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, "; "))
		}
		host, err := cutHostname(pod.Name, *o)
		return host, "", err
	}
	hostName = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, "; "))
		}
		hostName = h
	}
	if hostName, err = cutHostname(pod.Name, hostName); err != nil {
		return "", "", err
	}
	if sub := pod.Spec.Subdomain; sub != "" {
		if msgs := validation.IsDNS1123Label(sub); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod subdomain %q is not a valid DNS label: %s", sub, strings.Join(msgs, "; "))
		}
		// Without a cluster domain this ends in a dot, as upstream's.
		domain = fmt.Sprintf("%s.%s.svc.%s", sub, pod.Namespace, clusterDomain)
	}
	return hostName, domain, nil
}

// cutHostname cuts a hostname to the 63 characters of a DNS label: a pod
// name or hostnameOverride may be a 253-character subdomain, a kernel
// hostname may not. The cut may not end in '-' or '.'.
func cutHostname(podName, host string) (string, error) {
	if len(host) <= validation.DNS1123LabelMaxLength {
		return host, nil
	}
	cut := strings.TrimRight(host[:validation.DNS1123LabelMaxLength], "-.")
	if cut == "" {
		return "", fmt.Errorf("pod %q: hostname %q cannot be cut to a hostname", podName, host)
	}
	return cut, nil
}

// kernelHostname is the hostname a pod-network sandbox gets: the pod's
// hostname, or with setHostnameAsFQDN and a domain its FQDN, which must
// fit the kernel's 64 characters.
func kernelHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	host, domain, err := PodHostnameAndDomain(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	if f := pod.Spec.SetHostnameAsFQDN; f == nil || !*f || domain == "" {
		return host, nil
	}
	fqdn := host + "." + domain
	if len(fqdn) > maxKernelHostname {
		return "", fmt.Errorf("setHostnameAsFQDN: the FQDN %q is %d characters, longer than the %d a hostname may have",
			fqdn, len(fqdn), maxKernelHostname)
	}
	return fqdn, nil
}

// HostsFile returns the content of a pod's managed hosts file. nodeHosts
// is the node's /etc/hosts, used for host-network pods.
func HostsFile(pod *v1.Pod, podIPs []string, nodeHosts []byte, clusterDomain string) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(nodeHosts)
		if len(nodeHosts) > 0 && nodeHosts[len(nodeHosts)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		host, domain, err := PodHostnameAndDomain(pod, clusterDomain)
		if err != nil {
			return nil, err
		}
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, host, domain, host)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, host)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			// The API server and the manifest validation check IPs and
			// names; a line break would still forge entries, so none
			// gets through whatever the source.
			names := strings.Join(a.Hostnames, "\t")
			if strings.ContainsAny(a.IP+names, "\n\r") {
				return nil, fmt.Errorf("hostAliases entry for %q contains a line break", a.IP)
			}
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, names)
		}
	}
	return b.Bytes(), nil
}

// etcHostsMount mounts the managed hosts file at /etc/hosts, unless the
// container mounts a volume there itself or there is no file. Read-write,
// as upstream: a container may add entries for itself.
func etcHostsMount(c *v1.Container, file string) *runtimeapi.Mount {
	if file == "" {
		return nil
	}
	for _, vm := range c.VolumeMounts {
		if filepath.Clean(vm.MountPath) == etcHostsPath {
			return nil
		}
	}
	return &runtimeapi.Mount{HostPath: file, ContainerPath: etcHostsPath}
}
