package criconfig

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
)

func TestHostsFile(t *testing.T) {
	localhost := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo", "foo.local"}}, {IP: "10.1.2.4", Hostnames: []string{"bar"}}}
	tests := []struct {
		name      string
		spec      v1.PodSpec
		ips       []string
		nodeHosts string
		want      string
		wantErr   string
	}{
		{name: "pod network", ips: []string{"10.88.0.5"},
			want: localhost + "10.88.0.5\tweb\n"},
		{name: "no IP yet", want: localhost},
		{name: "hostname and subdomain, dual stack", ips: []string{"10.88.0.5", "fd00::5"}, spec: v1.PodSpec{Hostname: "db-0", Subdomain: "db"},
			want: localhost + "10.88.0.5\tdb-0.db.ns.svc.cluster.local\tdb-0\nfd00::5\tdb-0.db.ns.svc.cluster.local\tdb-0\n"},
		{name: "setHostnameAsFQDN changes no entry", ips: []string{"10.88.0.5"}, spec: v1.PodSpec{Subdomain: "db", SetHostnameAsFQDN: kptr.To(true)},
			want: localhost + "10.88.0.5\tweb.db.ns.svc.cluster.local\tweb\n"},
		{name: "hostAliases", ips: []string{"10.88.0.5"}, spec: v1.PodSpec{HostAliases: aliases},
			want: localhost + "10.88.0.5\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tfoo.local\n10.1.2.4\tbar\n"},
		{name: "host network, node file without final newline", spec: v1.PodSpec{HostNetwork: true, HostAliases: aliases[:1]},
			nodeHosts: "127.0.0.1 localhost node1",
			want:      "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost node1\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tfoo.local\n"},
		{name: "host network ignores hostname and IPs", spec: v1.PodSpec{HostNetwork: true, Hostname: "x", Subdomain: "y"},
			ips: []string{"192.168.1.5"}, nodeHosts: "127.0.0.1 localhost\n",
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"},
		{name: "forged alias line refused", ips: []string{"10.88.0.5"},
			spec:    v1.PodSpec{HostAliases: []v1.HostAlias{{IP: "10.1.2.4", Hostnames: []string{"bar\n1.1.1.1 evil"}}}},
			wantErr: "line break"},
		{name: "bad hostname", ips: []string{"10.88.0.5"}, spec: v1.PodSpec{Hostname: "Not_A_Label"}, wantErr: "not a valid DNS label"},
		{name: "bad subdomain", ips: []string{"10.88.0.5"}, spec: v1.PodSpec{Subdomain: "a.b"}, wantErr: "not a valid DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: tt.spec}
			b, err := HostsFile(pod, tt.ips, []byte(tt.nodeHosts), "cluster.local")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b, tt.want)
			}
		})
	}
}

func TestKernelHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-bc"
	tests := []struct {
		name, podName, domain string
		spec                  v1.PodSpec
		want, wantErr         string
	}{
		{name: "pod name", podName: "web", want: "web"},
		{name: "long pod name cut to a label", podName: long, want: strings.Repeat("a", 62)},
		{name: "spec.hostname", podName: "web", spec: v1.PodSpec{Hostname: "custom"}, want: "custom"},
		{name: "subdomain alone keeps the short name", podName: "web", spec: v1.PodSpec{Subdomain: "db"}, want: "web"},
		{name: "FQDN", podName: "web", spec: v1.PodSpec{Subdomain: "db", SetHostnameAsFQDN: kptr.To(true)},
			want: "web.db.ns.svc.cluster.local"},
		{name: "FQDN asked without subdomain", podName: "web", spec: v1.PodSpec{SetHostnameAsFQDN: kptr.To(true)}, want: "web"},
		{name: "FQDN false", podName: "web", spec: v1.PodSpec{Subdomain: "db", SetHostnameAsFQDN: kptr.To(false)}, want: "web"},
		{name: "FQDN of 64 characters", podName: "web", spec: v1.PodSpec{Hostname: strings.Repeat("h", 40), Subdomain: "db", SetHostnameAsFQDN: kptr.To(true)},
			want: strings.Repeat("h", 40) + ".db.ns.svc.cluster.local"},
		{name: "FQDN too long", podName: "web", spec: v1.PodSpec{Hostname: strings.Repeat("h", 41), Subdomain: "db", SetHostnameAsFQDN: kptr.To(true)},
			wantErr: "longer than the 64"},
		{name: "hostname with a dot", podName: "web", spec: v1.PodSpec{Hostname: "a.b"}, wantErr: `pod hostname "a.b" is not a valid DNS label`},
		{name: "subdomain upper case", podName: "web", spec: v1.PodSpec{Subdomain: "DB"}, wantErr: `pod subdomain "DB"`},
		{name: "hostnameOverride replaces hostname and subdomain", podName: "web",
			spec: v1.PodSpec{Hostname: "custom", Subdomain: "db", SetHostnameAsFQDN: kptr.To(true), HostnameOverride: kptr.To("override.example.host")},
			want: "override.example.host"},
		{name: "long hostnameOverride cut to a label", podName: "web", spec: v1.PodSpec{HostnameOverride: kptr.To(strings.Repeat("o", 62) + ".x")},
			want: strings.Repeat("o", 62)},
		{name: "hostnameOverride no subdomain", podName: "web", spec: v1.PodSpec{HostnameOverride: kptr.To("Bad_Name")},
			wantErr: `pod hostnameOverride "Bad_Name" is not a valid DNS subdomain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.podName, Namespace: "ns"}, Spec: tt.spec}
			got, err := kernelHostname(pod, "cluster.local")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("kernelHostname = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEtcHostsMount(t *testing.T) {
	tests := []struct {
		name   string
		mounts []v1.VolumeMount
		file   string
		want   bool
	}{
		{name: "mounted read-write", file: "/r/pods/u/etc-hosts", want: true},
		{name: "no file", file: ""},
		{name: "container mounts its own", file: "/r/pods/u/etc-hosts", mounts: []v1.VolumeMount{{Name: "own", MountPath: "/etc/hosts"}}},
		{name: "its own, unclean path", file: "/r/pods/u/etc-hosts", mounts: []v1.VolumeMount{{Name: "own", MountPath: "/etc//hosts/"}}},
		{name: "a mount beside it", file: "/r/pods/u/etc-hosts", mounts: []v1.VolumeMount{{Name: "etc", MountPath: "/etc/hosts.d"}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := etcHostsMount(&v1.Container{VolumeMounts: tt.mounts}, tt.file)
			if !tt.want {
				if m != nil {
					t.Fatalf("mount = %v, want none", m)
				}
				return
			}
			if m == nil || m.ContainerPath != "/etc/hosts" || m.HostPath != tt.file || m.Readonly {
				t.Errorf("mount = %v", m)
			}
		})
	}
}
