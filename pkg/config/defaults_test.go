package config

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestWithDefaultsPod(t *testing.T) {
	in := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers: []v1.Container{{
				Name:  "app",
				Image: "busybox:1.35",
				Ports: []v1.ContainerPort{{ContainerPort: 80}},
				Env: []v1.EnvVar{{Name: "NODE", ValueFrom: &v1.EnvVarSource{
					FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			}},
			Volumes: []v1.Volume{
				{Name: "scratch"},
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
			},
		},
	}
	orig := in.DeepCopy()
	p := WithDefaults(in)
	if !equality.Semantic.DeepEqual(in, orig) {
		t.Fatal("WithDefaults modified its input")
	}
	s := p.Spec
	c := s.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", p.Namespace, "default"},
		{"restartPolicy", s.RestartPolicy, v1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"dnsPolicy", s.DNSPolicy, v1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"securityContext set", s.SecurityContext != nil, true},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"imagePullPolicy pinned", c.ImagePullPolicy, v1.PullIfNotPresent},
		{"init imagePullPolicy untagged", s.InitContainers[0].ImagePullPolicy, v1.PullAlways},
		{"init terminationMessagePath", s.InitContainers[0].TerminationMessagePath, "/dev/termination-log"},
		{"port protocol", c.Ports[0].Protocol, v1.ProtocolTCP},
		{"no hostPort without hostNetwork", c.Ports[0].HostPort, int32(0)},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"request from limit", c.Resources.Requests.Memory().String(), "64Mi"},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"probe path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"probe scheme", c.LivenessProbe.HTTPGet.Scheme, v1.URISchemeHTTP},
		{"volume without source is emptyDir", s.Volumes[0].EmptyDir != nil, true},
		{"configMap mode", *s.Volumes[1].ConfigMap.DefaultMode, int32(0o644)},
		{"hostPath type", *s.Volumes[2].HostPath.Type, v1.HostPathUnset},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestWithDefaultsKeepsExplicitValues(t *testing.T) {
	in := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "kube-system"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(int64(0)),
			DNSPolicy:                     v1.DNSDefault,
			EnableServiceLinks:            ptr(false),
			HostNetwork:                   true,
			Containers: []v1.Container{{
				Name: "app", Image: "busybox:latest", ImagePullPolicy: v1.PullNever,
				Ports: []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
			}},
		},
	}
	p := WithDefaults(in)
	if p.Namespace != "kube-system" || p.Spec.RestartPolicy != v1.RestartPolicyNever ||
		*p.Spec.TerminationGracePeriodSeconds != 0 || p.Spec.DNSPolicy != v1.DNSDefault ||
		*p.Spec.EnableServiceLinks || p.Spec.Containers[0].ImagePullPolicy != v1.PullNever ||
		p.Spec.Containers[0].Ports[0].Protocol != v1.ProtocolUDP {
		t.Errorf("explicit values overwritten: %+v", p.Spec)
	}
	if got := p.Spec.Containers[0].Ports[0].HostPort; got != 53 {
		t.Errorf("hostNetwork hostPort = %d, want containerPort 53", got)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.35", v1.PullIfNotPresent},
		{"docker.io/library/busybox:1.35", v1.PullIfNotPresent},
		{"localhost:5000/busybox", v1.PullAlways},
		{"localhost:5000/busybox:1.0", v1.PullIfNotPresent},
		{"busybox@sha256:abcd", v1.PullIfNotPresent},
		{"busybox:latest@sha256:abcd", v1.PullAlways},
		{"registry.k8s.io/pause:3.10", v1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := DefaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}
