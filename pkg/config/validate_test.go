package config

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validPod is a defaulted pod that passes validation.
func validPod() *v1.Pod {
	return WithDefaults(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "app", Image: "busybox:1.35",
				Ports:        []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []v1.Volume{{Name: "data"}},
		},
	})
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*v1.Pod)
		want []string // each must appear in the aggregated error; none means valid
	}{
		{"valid", func(p *v1.Pod) {}, nil},
		{"bad name", func(p *v1.Pod) { p.Name = "Web_1" }, []string{`metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain`}},
		{"bad namespace", func(p *v1.Pod) { p.Namespace = "a.b" }, []string{`metadata.namespace: Invalid value: "a.b"`}},
		{"bad label", func(p *v1.Pod) { p.Labels = map[string]string{"app": "no spaces"} }, []string{`metadata.labels: Invalid value: "no spaces"`}},
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers: Required value: a pod needs at least one container"}},
		{"duplicate container name", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "app", Image: "x:1", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile})
		}, []string{`spec.containers[1].name: Duplicate value: "app"`}},
		{"init container name clashes", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "app", Image: "x:1", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile}}
		}, []string{`spec.containers[0].name: Duplicate value: "app"`}},
		{"ephemeral container in a manifest", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "x:1"}}}
		}, []string{"spec.ephemeralContainers: Forbidden: cannot be set on create"}},
		{"container name not a label", func(p *v1.Pod) { p.Spec.Containers[0].Name = "My_App" }, []string{`spec.containers[0].name: Invalid value: "My_App"`}},
		{"missing image", func(p *v1.Pod) { p.Spec.Containers[0].Image = " " }, []string{"spec.containers[0].image: Required value"}},
		{"image whitespace", func(p *v1.Pod) { p.Spec.Containers[0].Image = "busybox:1.35 " }, []string{"spec.containers[0].image: Invalid value"}},
		{"port zero", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []string{"spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535"}},
		{"port too big", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 70000 }, []string{"spec.containers[0].ports[0].hostPort: Invalid value: 70000"}},
		{"bad protocol", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "HTTP" }, []string{`spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`}},
		{"duplicate port name", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "http", ContainerPort: 9090, Protocol: v1.ProtocolTCP})
		}, []string{`spec.containers[0].ports[1].name: Duplicate value: "http"`}},
		{"host port used twice", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{
				{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
				{ContainerPort: 81, HostPort: 8080, Protocol: v1.ProtocolTCP},
			}
		}, []string{`spec.containers[0].ports[1].hostPort: Duplicate value: "TCP//8080"`}},
		{"hostNetwork hostPort mismatch", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 9000
		}, []string{"spec.containers[0].ports[0].hostPort: Invalid value: 9000: must match containerPort when hostNetwork is true"}},
		{"restartPolicy", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"dnsPolicy None without config", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, []string{"spec.dnsConfig.nameservers: Required value"}},
		{"duplicate volume", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		}, []string{`spec.volumes[1].name: Duplicate value: "data"`}},
		{"two volume types", func(p *v1.Pod) {
			p.Spec.Volumes[0].HostPath = &v1.HostPathVolumeSource{Path: "/x"}
		}, []string{"spec.volumes[0]: Forbidden: may not specify more than 1 volume type"}},
		{"relative hostPath", func(p *v1.Pod) {
			p.Spec.Volumes[0] = v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "var/log"}}}
		}, []string{`spec.volumes[0].hostPath.path: Invalid value: "var/log"`}},
		{"mount of unknown volume", func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, []string{`spec.containers[0].volumeMounts[0].name: Not found: "nope"`}},
		{"env name", func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A=B"}} }, []string{`spec.containers[0].env[0].name: Invalid value: "A=B"`}},
		{"env relaxed name is fine", func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "1-odd name"}} }, nil},
		{"env value and valueFrom", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "x", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
		}, []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
		{"request over limit", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			}
		}, []string{`spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1`}},
		{"negative grace period", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, []string{"spec.terminationGracePeriodSeconds: Invalid value: -1"}},
		{"hostname, subdomain and hostAliases", func(p *v1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db"
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.remote", "bar"}}, {IP: "fd00::1", Hostnames: []string{"v6"}}}
		}, nil},
		{"hostname not a label", func(p *v1.Pod) { p.Spec.Hostname = "a.b" }, []string{`spec.hostname: Invalid value: "a.b"`}},
		{"subdomain not a label", func(p *v1.Pod) { p.Spec.Subdomain = "Sub_1" }, []string{`spec.subdomain: Invalid value: "Sub_1"`}},
		{"hostAliases forging a line", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3\n1.1.1.1", Hostnames: []string{"ok", "evil\n8.8.8.8 bank.example", ""}}}
		}, []string{`spec.hostAliases[0].ip: Invalid value: "10.1.2.3\n1.1.1.1"`, `spec.hostAliases[0].hostnames[1]: Invalid value`, `spec.hostAliases[0].hostnames[2]: Required value`}},
		{"several errors at once", func(p *v1.Pod) {
			p.Name = ""
			p.Spec.Containers[0].Image = ""
		}, []string{"metadata.name: Required value", "spec.containers[0].image: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPod()
			tt.mod(p)
			errs := ValidatePod(p)
			if len(tt.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not contain %q", msg, w)
				}
			}
		})
	}
}
