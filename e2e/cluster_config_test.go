//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// TestClusterConfigVolumes: configMap, secret, downwardAPI and Memory
// emptyDir volumes of an API pod, on nodelet with the node's credentials
// (Node authorizer + NodeRestriction): content and modes as the container
// sees them, every one a tmpfs on the node, updates of the ConfigMap and the
// Secret reaching the running container, a missing ConfigMap holding the pod
// in ContainerCreating with a FailedMount event until it is created, and
// the tmpfs mounts gone when the pod is.
func TestClusterConfigVolumes(t *testing.T) {
	cluster, admin, n := configCluster(t)
	ctx := context.Background()
	cms, secrets := admin.CoreV1().ConfigMaps("default"), admin.CoreV1().Secrets("default")

	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data:       map[string]string{"greeting": "hello-1", "other": "x"},
		BinaryData: map[string][]byte{"blob": {0xff, 0x00, 0x01}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secret"},
		Data: map[string][]byte{"password": []byte("pw-1")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container reports modes once, then the two values every 100 ms.
	script := `echo "MODES cm=$(stat -L -c %a /cfg/greeting) blob=$(stat -L -c %a /cfg/data/blob) sec=$(stat -L -c %a /sec/password) down=$(stat -L -c %a /down/name)"
echo "BLOB $(od -An -tx1 /cfg/data/blob | tr -d ' ')"
echo "DOWN $(cat /down/name) $(cat /down/labels) cpu=$(cat /down/cpu_limit)"
echo "OPTIONAL $(ls /opt | wc -l)"
echo "MEM $(df -k /mem | tail -1)"
touch /cfg/x 2>/dev/null && echo "WRITABLE"
while true; do echo "NOW cm=$(cat /cfg/greeting) sec=$(cat /sec/password)"; sleep 0.1; done`
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: config-vols
  namespace: default
  labels: {app: vols}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec}
    - {name: down, mountPath: /down}
    - {name: opt, mountPath: /opt}
    - {name: mem, mountPath: /mem}
  volumes:
  - name: cfg
    configMap:
      name: app-config
      defaultMode: 0640
      items:
      - {key: greeting, path: greeting}
      - {key: blob, path: data/blob, mode: 0600}
  - name: sec
    secret: {secretName: app-secret, defaultMode: 0400}
  - name: down
    downwardAPI:
      items:
      - path: name
        fieldRef: {fieldPath: metadata.name}
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
      - path: cpu_limit
        resourceFieldRef: {containerName: app, resource: limits.cpu}
  - name: opt
    secret: {secretName: does-not-exist, optional: true}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
`, framework.NodeName, script)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	p := cpWaitPod(t, admin, "config-vols", 60*time.Second, "Running", cpRunningInAPI)
	logFile := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", "config-vols", p.UID), criconfig.ContainerLogPath("app", 0))
	logHas := func(want string) bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), want)
	}
	poll.Within(t, 30*time.Second, "first values in the log", func() (bool, string) {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "NOW cm="), string(b)
	})
	for _, want := range []string{
		"MODES cm=640 blob=600 sec=400 down=644", "BLOB ff0001", fmt.Sprintf(`DOWN config-vols app="vols" cpu=%d`, goruntime.NumCPU()),
		"OPTIONAL 0", "8192", "NOW cm=hello-1 sec=pw-1",
	} {
		if !logHas(want) {
			b, _ := os.ReadFile(logFile)
			t.Errorf("container log lacks %q:\n%s", want, lastLines(string(b), 12))
		}
	}
	if logHas("WRITABLE") {
		t.Error("configMap volume is writable in the container")
	}

	// Every volume with API content, and the Memory emptyDir, is a tmpfs
	// on the node; only root can reach into the plugin directories.
	mounts, err := framework.MountsUnder(filepath.Join(n.RootDir, "pods", string(p.UID)))
	if err != nil {
		t.Fatal(err)
	}
	for _, plugin := range []string{"configmap/cfg", "secret/sec", "downward-api/down", "secret/opt", "empty-dir/mem"} {
		typ, name, _ := strings.Cut(plugin, "/")
		dir := filepath.Join(n.RootDir, "pods", string(p.UID), "volumes", "kubernetes.io~"+typ, name)
		if !containsString(mounts, dir) {
			t.Errorf("%s is not a mount point; mounts: %v", dir, mounts)
		}
		if typ != "empty-dir" {
			if fi, err := os.Stat(filepath.Dir(dir)); err != nil || fi.Mode().Perm()&0o007 != 0 {
				t.Errorf("%s readable by other users: %v %v", filepath.Dir(dir), fi.Mode(), err)
			}
		}
	}
	fsType := mountType(t, filepath.Join(n.RootDir, "pods", string(p.UID), "volumes", "kubernetes.io~secret", "sec"))
	if fsType != "tmpfs" {
		t.Errorf("secret volume on %q, want tmpfs", fsType)
	}

	// Updates reach the running container.
	begin := time.Now()
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"greeting": "hello-2"}, BinaryData: map[string][]byte{"blob": {1}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Update(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secret"},
		Data: map[string][]byte{"password": []byte("pw-2")}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Within(t, 60*time.Second, "updated ConfigMap and Secret in the container", func() (bool, string) {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "NOW cm=hello-2 sec=pw-2"), lastLines(string(b), 3)
	})
	t.Logf("measured: ConfigMap + Secret update -> seen by the running container: %s", time.Since(begin).Round(10*time.Millisecond))

	// A missing ConfigMap holds the pod in ContainerCreating, with a
	// FailedMount event naming it, until it exists.
	late := strings.ReplaceAll(cpPodYAML("config-late", "cat /late/k; sleep 3600", 1), "  containers:\n", `  volumes:
  - name: late
    configMap: {name: created-later}
  containers:
`) + "    volumeMounts:\n    - {name: late, mountPath: /late}\n"
	if out, err := cluster.KubectlInput(late, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	lp := cpWaitPod(t, admin, "config-late", 60*time.Second, "waiting in ContainerCreating", func(p *v1.Pod) bool {
		cs := framework.ContainerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating"
	})
	waitFailedMount(t, admin, lp, `"created-later"`)
	begin = time.Now()
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created-later"},
		Data: map[string]string{"k": "arrived"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cpWaitPod(t, admin, "config-late", 60*time.Second, "Running once the ConfigMap exists", cpRunningInAPI)
	t.Logf("measured: missing ConfigMap created -> pod Running: %s", time.Since(begin).Round(10*time.Millisecond))

	// Deleting the pod unmounts its tmpfs volumes.
	if _, err := cluster.Kubectl("delete", "pod", "config-vols", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	poll.Within(t, 30*time.Second, "the deleted pod's mounts gone", func() (bool, string) {
		m, _ := framework.MountsUnder(filepath.Join(n.RootDir, "pods", string(p.UID)))
		return len(m) == 0, fmt.Sprint(m)
	})
}

// waitFailedMount waits for a FailedMount event of pod whose message holds
// want.
func waitFailedMount(t *testing.T, c kubernetes.Interface, p *v1.Pod, want string) {
	t.Helper()
	sel := fields.Set{"involvedObject.uid": string(p.UID), "reason": "FailedMount"}.AsSelector().String()
	poll.Within(t, 60*time.Second, "a FailedMount event naming "+want, func() (bool, string) {
		evs, err := c.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range evs.Items {
			if strings.Contains(e.Message, want) {
				return true, ""
			}
			msgs = append(msgs, e.Message)
		}
		return false, strings.Join(msgs, "\n")
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mountType returns the filesystem type mounted at dir ("" if none).
func mountType(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	typ := ""
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == dir {
			typ = f[2]
		}
	}
	return typ
}

// TestClusterConfigEnv: env vars from a ConfigMap and a Secret
// (configMapKeyRef, secretKeyRef, envFrom with a prefix), resourceFieldRef, and a missing ConfigMap holding
// the container in CreateContainerConfigError with upstream's message until
// it is created.
func TestClusterConfigEnv(t *testing.T) {
	cluster, admin, n := configCluster(t)
	ctx := context.Background()
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "env-config"},
		Data: map[string]string{"LEVEL": "debug", "1st": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "env-secret"},
		Data: map[string][]byte{"PASSWORD": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := admin.CoreV1().Services("default").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-db"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "pg", Port: 5432}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: env-pod
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "env | sort; sleep 3600"]
    resources:
      limits: {memory: 64Mi}
      requests: {cpu: 250m, memory: 32Mi}
    envFrom:
    - prefix: CFG_
      configMapRef: {name: env-config}
    - secretRef: {name: env-secret}
    env:
    - name: LEVEL_FROM_KEY
      valueFrom: {configMapKeyRef: {name: env-config, key: LEVEL}}
    - name: PW_FROM_KEY
      valueFrom: {secretKeyRef: {name: env-secret, key: PASSWORD}}
    - name: OPTIONAL_MISSING
      valueFrom: {configMapKeyRef: {name: nope, key: x, optional: true}}
    - name: COMBINED
      value: "$(CFG_LEVEL)-$(PW_FROM_KEY)"
    - name: MEM_LIMIT_MI
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    - name: CPU_REQ_M
      valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}
    - name: CPU_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.cpu}}
`, framework.NodeName)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	p := cpWaitPod(t, admin, "env-pod", 60*time.Second, "Running", cpRunningInAPI)
	logFile := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", "env-pod", p.UID), criconfig.ContainerLogPath("app", 0))
	var log string
	poll.Within(t, 30*time.Second, "the environment in the log", func() (bool, string) {
		b, _ := os.ReadFile(logFile)
		log = string(b)
		return strings.Contains(log, "PW_FROM_KEY="), log
	})
	for _, want := range []string{
		"CFG_LEVEL=debug", "PASSWORD=s3cret", "LEVEL_FROM_KEY=debug", "PW_FROM_KEY=s3cret",
		"COMBINED=debug-s3cret", "MEM_LIMIT_MI=64", "CPU_REQ_M=250", "CPU_LIMIT=", "CFG_1st=x",
		"KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
		"MY_DB_SERVICE_HOST=" + db.Spec.ClusterIP + "\n", "MY_DB_SERVICE_PORT_PG=5432", "MY_DB_PORT=tcp://" + db.Spec.ClusterIP + ":5432",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("environment lacks %q:\n%s", want, log)
		}
	}
	for _, unwanted := range []string{"OPTIONAL_MISSING", "CPU_LIMIT=0\n"} {
		if strings.Contains(log, unwanted) {
			t.Errorf("environment has %q:\n%s", unwanted, log)
		}
	}
	// A missing ConfigMap: CreateContainerConfigError until it exists.
	late := cpPodYAML("env-late", "echo LATE=$LATE; sleep 3600", 1) + `    env:
    - name: LATE
      valueFrom: {configMapKeyRef: {name: env-later, key: k}}
`
	if out, err := cluster.KubectlInput(late, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	cpWaitPod(t, admin, "env-late", 60*time.Second, "CreateContainerConfigError", func(p *v1.Pod) bool {
		cs := framework.ContainerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs.State.Waiting.Message, `configmap "env-later" not found`)
	})
	begin := time.Now()
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "env-later"},
		Data: map[string]string{"k": "arrived"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cpWaitPod(t, admin, "env-late", 60*time.Second, "Running once the ConfigMap exists", cpRunningInAPI)
	t.Logf("measured: missing ConfigMap for an env var created -> pod Running: %s", time.Since(begin).Round(10*time.Millisecond))
}

// TestClusterEtcHosts: the managed /etc/hosts of a pod-network pod (its IP
// with hostname and FQDN, hostAliases, writable), the kernel hostname with
// setHostnameAsFQDN, a container mounting its own /etc/hosts left alone,
// and the hosts file of a host-network pod (the node's file plus
// hostAliases).
func TestClusterEtcHosts(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--cluster-domain", "cluster.local")
	cpWaitNode(t, admin)

	podNet := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hosts-pod
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  hostname: db-0
  subdomain: db
  setHostnameAsFQDN: true
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo.remote, bar.remote]
  volumes:
  - name: node-hosts
    hostPath: {path: /etc/hosts, type: File}
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "cat /etc/hosts; echo HOSTNAME=$(hostname); echo 10.9.9.9 mine >> /etc/hosts && echo APPENDED; echo DONE; sleep 3600"]
  - name: own
    image: busybox:1.35
    command: ["sh", "-c", "cat /etc/hosts; echo DONE; sleep 3600"]
    volumeMounts:
    - {name: node-hosts, mountPath: /etc/hosts, readOnly: true}
`, framework.NodeName)
	hostNet := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hosts-hostnet
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo.remote, bar.remote]
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "cat /etc/hosts; echo DONE; sleep 3600"]
`, framework.NodeName)
	for _, m := range []string{podNet, hostNet} {
		if out, err := cluster.KubectlInput(m, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	logOf := func(p *v1.Pod, container string) string {
		file := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", p.Name, p.UID), criconfig.ContainerLogPath(container, 0))
		var log string
		poll.Within(t, 30*time.Second, p.Name+"/"+container+" output", func() (bool, string) {
			b, _ := os.ReadFile(file)
			log = criLogText(string(b))
			return strings.Contains(log, "DONE"), log
		})
		return log
	}
	running := func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodRunning && framework.Running(p) }
	node, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	nodeLines := strings.Split(strings.TrimSpace(string(node)), "\n")

	p := cpWaitPod(t, admin, "hosts-pod", 60*time.Second, "Running", cpRunningInAPI)
	log := logOf(p, "app")
	fqdn := "db-0.db.default.svc.cluster.local"
	for _, want := range []string{
		"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		p.Status.PodIP + "\t" + fqdn + "\tdb-0\n", "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\tbar.remote\n",
		"HOSTNAME=" + fqdn + "\n", "APPENDED",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("hosts-pod/app output lacks %q:\n%s", want, log)
		}
	}
	// The container's own mount: the node's file, untouched.
	log = logOf(p, "own")
	if strings.Contains(log, "Kubernetes-managed") || strings.Contains(log, "foo.remote") {
		t.Errorf("hosts-pod/own got a managed /etc/hosts over its own mount:\n%s", log)
	}
	for _, want := range nodeLines {
		if !strings.Contains(log, want) {
			t.Errorf("hosts-pod/own output lacks the node's %q:\n%s", want, log)
		}
	}
	b, err := os.ReadFile(layout.EtcHostsFile(n.RootDir, p.UID))
	if err != nil || !strings.Contains(string(b), "10.9.9.9 mine") {
		t.Errorf("the pod's hosts file on the node (%v) lacks what the container appended:\n%s", err, b)
	}

	p = cpWaitPod(t, admin, "hosts-hostnet", 60*time.Second, "Running", running)
	log = logOf(p, "app")
	for _, want := range append([]string{"# Kubernetes-managed hosts file (host network).\n", "10.1.2.3\tfoo.remote\tbar.remote\n"}, nodeLines...) {
		if !strings.Contains(log, want) {
			t.Errorf("hosts-hostnet output lacks %q:\n%s", want, log)
		}
	}
}

// configCluster starts an API server, containerd and a nodelet member of
// the cluster with the node's credentials, and waits for its Node.
func configCluster(t *testing.T) (*framework.Cluster, kubernetes.Interface, *framework.Nodelet) {
	t.Helper()
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	return cluster, admin, n
}
