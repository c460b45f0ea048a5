package criconfig

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

var testOpts = ConfigOptions{
	PodLogsDir: "/var/log/pods",
	RootDir:    "/var/lib/nodelet",
	NodeName:   "node-1",
	NodeIPs:    []string{"192.168.1.10"},
}

func configPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "prod", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"kubernetes.io/config.source": "file"},
		},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "nginx", Image: "nginx:1.2",
				Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}},
			}},
		},
	}
}

func TestSandboxConfig(t *testing.T) {
	pod := configPod()
	cfg, err := SandboxConfig(pod, 2, SandboxResources{}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Metadata; m.Name != "web" || m.Namespace != "prod" || m.Uid != "uid-1" || m.Attempt != 2 {
		t.Errorf("metadata = %+v", m)
	}
	if cfg.Hostname != "web" || cfg.LogDirectory != "/var/log/pods/prod_web_uid-1" {
		t.Errorf("hostname %q, log dir %q", cfg.Hostname, cfg.LogDirectory)
	}
	if cfg.Labels["app"] != "web" || cfg.Labels[cri.LabelPodUID] != "uid-1" || cfg.Annotations["kubernetes.io/config.source"] != "file" {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	wantPorts := []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080}}
	if !reflect.DeepEqual(cfg.PortMappings, wantPorts) {
		t.Errorf("ports = %v, want only the hostPort one", cfg.PortMappings)
	}
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	if ns.Network != runtimeapi.NamespaceMode_POD || ns.Pid != runtimeapi.NamespaceMode_CONTAINER || ns.Ipc != runtimeapi.NamespaceMode_POD {
		t.Errorf("namespaces = %v", ns)
	}
	if cfg.DnsConfig != nil {
		t.Errorf("DNS = %v, want nil (runtime copies the node's)", cfg.DnsConfig)
	}
	if cfg.Linux.CgroupParent != "" || cfg.Linux.SecurityContext.Privileged {
		t.Errorf("linux = %v", cfg.Linux)
	}

	pod.Spec.HostNetwork, pod.Spec.HostPID, pod.Spec.HostIPC = true, true, true
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
	cfg, _ = SandboxConfig(pod, 0, SandboxResources{}, testOpts)
	ns = cfg.Linux.SecurityContext.NamespaceOptions
	if ns.Network != runtimeapi.NamespaceMode_NODE || ns.Pid != runtimeapi.NamespaceMode_NODE || ns.Ipc != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host namespaces = %v", ns)
	}
	if cfg.Hostname != "" || cfg.Annotations[cri.AnnotationSandboxHostNetwork] != "true" {
		t.Errorf("host network: hostname %q, annotations %v", cfg.Hostname, cfg.Annotations)
	}
	if !cfg.Linux.SecurityContext.Privileged {
		t.Errorf("sandbox of a privileged container must be privileged")
	}
}

func TestDNSConfig(t *testing.T) {
	host := &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"corp.example"}, Options: []string{"ndots:1", "edns0"}}
	cluster := ConfigOptions{HostDNS: host, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}
	for _, tt := range []struct {
		name   string
		opts   ConfigOptions
		mutate func(*v1.Pod)
		want   *runtimeapi.DNSConfig
	}{
		{"no cluster DNS: node resolver", ConfigOptions{HostDNS: host}, nil, host},
		{"no host DNS known: runtime default", ConfigOptions{}, nil, nil},
		{"ClusterFirst with cluster DNS", cluster, nil, &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
			Options:  []string{"ndots:5"}}},
		{"host network: node resolver", cluster, func(p *v1.Pod) { p.Spec.HostNetwork = true }, host},
		{"ClusterFirstWithHostNet", cluster, func(p *v1.Pod) {
			p.Spec.HostNetwork, p.Spec.DNSPolicy = true, v1.DNSClusterFirstWithHostNet
		}, &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
			Options:  []string{"ndots:5"}}},
		{"Default", cluster, func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault }, host},
		{"None with pod config", cluster, func(p *v1.Pod) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.b"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}}}
		}, &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.b"}, Options: []string{"ndots:2"}}},
		{"pod options override node options", ConfigOptions{HostDNS: host}, func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("3")}, {Name: "rotate"}}}
		}, &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "ndots:3", "rotate"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := configPod()
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			got := DNSConfig(pod, tt.opts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DNSConfig:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
	if !reflect.DeepEqual(host.Options, []string{"ndots:1", "edns0"}) {
		t.Errorf("node DNS config was modified: %v", host)
	}
}

func TestParseResolvConf(t *testing.T) {
	in := "# comment\nnameserver 10.0.0.2\nnameserver 10.0.0.3 # second\nsearch a.example b.example\nsearch c.example\noptions ndots:2 edns0\ndomain x\n"
	got, err := ParseResolvConf(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"c.example"}, Options: []string{"ndots:2", "edns0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestContainerConfig(t *testing.T) {
	pod := configPod()
	pod.Spec.NodeName = "node-1"
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(45))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000))}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c"}
	c.Args = []string{"echo $(GREETING) $(MISSING) $$(GREETING) $(POD)"}
	c.WorkingDir = "/work"
	c.TTY, c.Stdin = true, true
	c.TerminationMessagePath = "/dev/termination-log"
	c.Env = []v1.EnvVar{
		{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
		{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "GREETING", Value: "hello $(POD)"},
	}
	c.SecurityContext = &v1.SecurityContext{RunAsUser: ptr(int64(0)), Privileged: ptr(true),
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}}}
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}

	cfg, _, err := ContainerConfig(pod, c, prepared(t, pod, ContainerParams{RestartCount: 3, ImageRef: "sha256:abc", PodIPs: []string{"10.88.0.5"}}), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metadata.Name != "nginx" || cfg.Metadata.Attempt != 3 || cfg.LogPath != "nginx/3.log" {
		t.Errorf("metadata %v log path %q", cfg.Metadata, cfg.LogPath)
	}
	if cfg.Image.Image != "sha256:abc" || cfg.Image.UserSpecifiedImage != "nginx:1.2" {
		t.Errorf("image = %v", cfg.Image)
	}
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	wantEnv := map[string]string{"POD": "web", "NS": "prod", "UID": "uid-1", "IP": "10.88.0.5", "NODE": "node-1",
		"HOST_IP": "192.168.1.10", "APP": "web", "GREETING": "hello web"}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env = %v, want %v", env, wantEnv)
	}
	wantArgs := []string{"echo hello web $(MISSING) $(GREETING) web"}
	if !reflect.DeepEqual(cfg.Args, wantArgs) || !reflect.DeepEqual(cfg.Command, c.Command) {
		t.Errorf("command %q args %q, want args %q", cfg.Command, cfg.Args, wantArgs)
	}
	if cfg.WorkingDir != "/work" || !cfg.Tty || !cfg.Stdin {
		t.Errorf("workdir/tty/stdin = %q %v %v", cfg.WorkingDir, cfg.Tty, cfg.Stdin)
	}
	id, err := cri.ParseContainerIdentity(cfg.Labels, cfg.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if id.Hash != runtime.HashContainer(c) || id.RestartCount != 3 || *id.TerminationGracePeriod != 45 || id.TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("identity = %+v", id)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 0 || sc.RunAsGroup.GetValue() != 2000 || !sc.Privileged ||
		!reflect.DeepEqual(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) {
		t.Errorf("security context = %v", sc)
	}
	r := cfg.Linux.Resources
	if r.CpuShares != 256 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 64<<20 || r.OomScoreAdj != 999 {
		t.Errorf("resources = %v", r)
	}
}

func TestContainerConfigHostNetworkPodIP(t *testing.T) {
	pod := configPod()
	pod.Spec.HostNetwork = true
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	cfg, _, err := ContainerConfig(pod, c, ContainerParams{}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.Envs[0].Value); got != "192.168.1.10" {
		t.Errorf("host-network pod IP = %q, want the node IP", got)
	}
	if r := cfg.Linux.Resources; r.CpuShares != 2 || r.CpuQuota != 0 || r.MemoryLimitInBytes != 0 || r.OomScoreAdj != 1000 {
		t.Errorf("best-effort resources = %v", r)
	}
}

func TestContainerConfigUnsupported(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   string
	}{
		{"secret env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "pw"}}}}
		}, `env "PW": couldn't get secret prod/: a static pod cannot use API objects`},
		{"resource env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "L", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}}}}
		}, `resourceFieldRef "limits.nvidia.com/gpu" not supported yet`},
		{"unknown field", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.schedulerName"}}}}
		}, `valueFrom.fieldRef "spec.schedulerName" not supported yet`},
		{"envFrom", func(p *v1.Pod) {
			p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{}}}
		}, "couldn't get configMap prod/: a static pod cannot use API objects"},
		{"nfs volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "n", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "n", MountPath: "/n"}}
		}, `volume "n": volume type nfs not supported yet`},
		{"mount of missing volume", func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, `volume mount "nope": no such volume`},
		{"escaping subPath", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "d", MountPath: "/x", SubPath: "../../etc"}}
		}, "must not contain '..'"},
		{"absolute subPath", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "d", MountPath: "/x", SubPath: "/etc"}}
		}, "must be a relative path"},
		{"subPathExpr escaping through env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "D", Value: "a/../.."}}
			p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "d", MountPath: "/x", SubPathExpr: "$(D)"}}
		}, "must not contain '..'"},
		{"mount of an unprepared volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "d", MountPath: "/x"}}
			p.Spec.Volumes[0].Name = "late" // prepared under another name
			p.Spec.Containers[0].VolumeMounts[0].Name = "late"
		}, `volume mount "late": volume not prepared`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := configPod()
			tt.mutate(pod)
			paths, err := VolumePaths(pod, testOpts)
			if err == nil {
				delete(paths, "late")
				_, _, err = ContainerConfig(pod, &pod.Spec.Containers[0], ContainerParams{VolumePaths: paths}, testOpts)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	// A subPath is bound under the root dir: none, no subPath.
	pod := configPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/x", SubPath: "s"}}
	noRoot := testOpts
	noRoot.RootDir = ""
	_, _, err := ContainerConfig(pod, &pod.Spec.Containers[0], prepared(t, pod, ContainerParams{}), noRoot)
	if err == nil || !strings.Contains(err.Error(), "subPath needs a root directory") {
		t.Errorf("subPath without a root dir: err = %v", err)
	}
}

// prepared returns p with the node paths of pod's volumes, as the volume
// step of the pod-resource pipeline prepares them.
func prepared(t *testing.T, pod *v1.Pod, p ContainerParams) ContainerParams {
	t.Helper()
	paths, err := VolumePaths(pod, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	p.VolumePaths = paths
	return p
}

func TestCheckVolumes(t *testing.T) {
	pod := configPod()
	pod.Spec.Volumes = []v1.Volume{
		{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "b", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}}},
	}
	if err := CheckVolumes(pod); err != nil {
		t.Errorf("supported volumes: %v", err)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}})
	err := CheckVolumes(pod)
	if !errors.Is(err, ErrUnsupported) || err.Error() != `volume "tok": volume type projected not supported yet` {
		t.Errorf("projected: %v", err)
	}
	pod.Spec.Volumes = []v1.Volume{{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	if err := CheckVolumes(pod); err != nil {
		t.Errorf("memory emptyDir: %v", err)
	}
	pod.Spec.Volumes[0].EmptyDir.Medium = v1.StorageMediumHugePages
	if err := CheckVolumes(pod); !errors.Is(err, ErrUnsupported) {
		t.Errorf("hugepages emptyDir: %v", err)
	}
}

func TestAPIVolumeMounts(t *testing.T) {
	pod := configPod()
	pod.Spec.Volumes = []v1.Volume{
		{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
		{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
	}
	for _, v := range pod.Spec.Volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	cfg, _, err := ContainerConfig(pod, &pod.Spec.Containers[0], prepared(t, pod, ContainerParams{}), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/c": "configmap", "/s": "secret", "/d": "downward-api", "/p": "projected"}
	for _, m := range cfg.Mounts {
		dir := filepath.Join(testOpts.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~"+want[m.ContainerPath], m.ContainerPath[1:])
		if m.HostPath != dir || !m.Readonly {
			t.Errorf("mount %s = %s (readonly %v), want %s read-only", m.ContainerPath, m.HostPath, m.Readonly, dir)
		}
	}
}

func TestContainerMounts(t *testing.T) {
	pod := configPod()
	htc := v1.MountPropagationHostToContainer
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "data", MountPath: "/data", SubPath: "sub"},
		{Name: "host", MountPath: "/srv", ReadOnly: true, MountPropagation: &htc},
		{Name: "host", MountPath: "/logs", SubPathExpr: "logs/$(POD)"},
	}
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD", Value: "web-0"}}
	cfg, bound, err := ContainerConfig(pod, &pod.Spec.Containers[0], prepared(t, pod, ContainerParams{}), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	// A subPath is never joined onto the volume path: the runtime mounts
	// the node-owned bind target.
	subpaths := "/var/lib/nodelet/pods/uid-1/volume-subpaths/"
	want := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: subpaths + "data/" + pod.Spec.Containers[0].Name + "/0"},
		{ContainerPath: "/srv", HostPath: "/srv", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/logs", HostPath: subpaths + "host/" + pod.Spec.Containers[0].Name + "/2"},
	}
	if !reflect.DeepEqual(cfg.Mounts, want) {
		t.Errorf("mounts:\n got %v\nwant %v", cfg.Mounts, want)
	}
	wantBound := []SubpathMount{
		{Mount: "data", Volume: "data", VolumePath: "/var/lib/nodelet/pods/uid-1/volumes/kubernetes.io~empty-dir/data", Path: "sub", Target: want[0].HostPath},
		{Mount: "host", Volume: "host", VolumePath: "/srv", Path: "logs/web-0", Target: want[2].HostPath},
	}
	if !reflect.DeepEqual(bound, wantBound) {
		t.Errorf("bound:\n got %+v\nwant %+v", bound, wantBound)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"":               "",
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(B)z":    "x1ytwoz",
		"$(C)":           "$(C)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"$":              "$",
		"a$b":            "a$b",
		"$(A":            "$(A",
		"$()":            "$()",
		"$(A)$(A)$$$(B)": "11$two",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNeedsPodIP(t *testing.T) {
	c := &v1.Container{Env: []v1.EnvVar{{Name: "X", Value: "y"}}}
	if NeedsPodIP(c) {
		t.Error("static env needs no pod IP")
	}
	c.Env = append(c.Env, v1.EnvVar{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}})
	if !NeedsPodIP(c) {
		t.Error("status.podIPs needs the pod IP")
	}
}

func ptr[T any](v T) *T { return &v }

// TestAllContainers: init, app, then ephemeral containers, pointing into
// the spec (env and volume references of a debugger count too).
func TestAllContainers(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "i"}},
		Containers:     []v1.Container{{Name: "a"}, {Name: "b"}},
		EphemeralContainers: []v1.EphemeralContainer{
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg"}, TargetContainerName: "a"},
		},
	}}
	all := AllContainers(pod)
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "i,a,b,dbg" {
		t.Fatalf("AllContainers = %v", names)
	}
	all[3].Image = "changed"
	if pod.Spec.EphemeralContainers[0].Image != "changed" {
		t.Error("the ephemeral container is a copy, not the spec's")
	}
}

// TestContainerConfigHashAnnotations: every container carries upstream's
// hash and its preStop/ports annotations in upstream's format; only a
// static pod's also carries the whole spec's hash.
func TestContainerConfigHashAnnotations(t *testing.T) {
	for _, source := range []string{"file", "http", "api"} {
		t.Run(source, func(t *testing.T) {
			pod := configPod()
			pod.Annotations["kubernetes.io/config.source"] = source
			c := &pod.Spec.Containers[0]
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}}
			cfg, _, err := ContainerConfig(pod, c, ContainerParams{}, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			a := cfg.Annotations
			if got, want := a[cri.AnnotationContainerHash], strconv.FormatUint(runtime.HashContainer(c), 16); got != want {
				t.Errorf("hash annotation %q, want %q", got, want)
			}
			if got, want := a[cri.AnnotationContainerPreStopHandler], `{"exec":{"command":["sh","-c","sleep 1"]}}`; got != want {
				t.Errorf("preStopHandler annotation %q, want %q", got, want)
			}
			if got, want := a[cri.AnnotationContainerPorts], `[{"hostPort":8080,"containerPort":80},{"containerPort":53,"protocol":"UDP"}]`; got != want {
				t.Errorf("ports annotation %q, want %q", got, want)
			}
			specHash, stamped := a[cri.AnnotationContainerSpecHash]
			if static := source != "api"; stamped != static {
				t.Errorf("spec hash annotation present: %v, want %v", stamped, static)
			}
			if stamped && specHash != strconv.FormatUint(runtime.HashContainerSpec(c), 16) {
				t.Errorf("spec hash annotation %q, want HashContainerSpec's", specHash)
			}
		})
	}
}
