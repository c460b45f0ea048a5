package servicenv

import (
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func render(m map[string]string) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestVars(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		svc("web", "my-db", "10.96.0.20", v1.ServicePort{Port: 5432}, v1.ServicePort{Name: "metrics", Port: 9187, Protocol: v1.ProtocolUDP}),
		svc("web", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		svc("web", "external", ""),
		svc("other", "elsewhere", "10.96.0.30", v1.ServicePort{Port: 80}),
	}
	master := `KUBERNETES_PORT=tcp://10.96.0.1:443
KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443
KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1
KUBERNETES_PORT_443_TCP_PORT=443
KUBERNETES_PORT_443_TCP_PROTO=tcp
KUBERNETES_SERVICE_HOST=10.96.0.1
KUBERNETES_SERVICE_PORT=443
KUBERNETES_SERVICE_PORT_HTTPS=443`
	if got := render(Vars(services, "web", false)); got != master {
		t.Errorf("without links:\n%s\nwant\n%s", got, master)
	}
	want := master + `
MY_DB_PORT=tcp://10.96.0.20:5432
MY_DB_PORT_5432_TCP=tcp://10.96.0.20:5432
MY_DB_PORT_5432_TCP_ADDR=10.96.0.20
MY_DB_PORT_5432_TCP_PORT=5432
MY_DB_PORT_5432_TCP_PROTO=tcp
MY_DB_PORT_9187_UDP=udp://10.96.0.20:9187
MY_DB_PORT_9187_UDP_ADDR=10.96.0.20
MY_DB_PORT_9187_UDP_PORT=9187
MY_DB_PORT_9187_UDP_PROTO=udp
MY_DB_SERVICE_HOST=10.96.0.20
MY_DB_SERVICE_PORT=5432
MY_DB_SERVICE_PORT_METRICS=9187`
	if got := render(Vars(services, "web", true)); got != want {
		t.Errorf("with links:\n%s\nwant\n%s", got, want)
	}
}

func TestVarsOwnKubernetesService(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Port: 443}),
		svc("web", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 1}),
	}
	if got := Vars(services, "web", true)["KUBERNETES_SERVICE_HOST"]; got != "10.96.9.9" {
		t.Errorf("with links, the namespace's own service: %q", got)
	}
	if got := Vars(services, "web", false)["KUBERNETES_SERVICE_HOST"]; got != "10.96.0.1" {
		t.Errorf("without links, the API server's: %q", got)
	}
}
