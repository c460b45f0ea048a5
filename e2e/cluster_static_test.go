//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterStaticPodAPIObjectsRefused: static pods of a cluster member
// that reference API objects (a configMap volume, a secretKeyRef, a
// projected serviceAccountToken, imagePullSecrets) are refused, even though the objects
// exist: the pod's status on the node says why, and so does an event the
// user sees in the API under the pod's mirror name. A plain static pod
// beside them runs and has its mirror.
func TestClusterStaticPodAPIObjectsRefused(t *testing.T) {
	_, admin, n := configCluster(t)
	ctx := context.Background()
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "static-cfg"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "static-sec"},
		Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		"cm-static": podManifest("cm-static", container("app", "sleep 3600")+`    volumeMounts:
    - {name: cfg, mountPath: /cfg}
  volumes:
  - name: cfg
    configMap: {name: static-cfg}
`),
		"sec-static": podManifest("sec-static", container("app", "sleep 3600")+`    env:
    - name: PW
      valueFrom: {secretKeyRef: {name: static-sec, key: k}}
`),
		"pull-static": podManifest("pull-static", container("app", "sleep 3600")+`  imagePullSecrets:
  - name: static-sec
`),
		"tok-static": podManifest("tok-static", container("app", "sleep 3600")+`    volumeMounts:
    - {name: tok, mountPath: /tok}
  volumes:
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
`),
	}
	for name, m := range refused {
		n.WriteManifest(name+".yaml", m)
	}
	n.WriteManifest("ok-static.yaml", podManifest("ok-static", container("app", "sleep 3600")))

	cpWaitPod(t, admin, "ok-static"+staticSuffix, 60*time.Second, "mirror Running", cpRunningInAPI)
	const why = "a static pod cannot use API objects"
	for name := range refused {
		p := n.WaitPod(name+staticSuffix, 30*time.Second, "refused", func(p *v1.Pod) bool {
			cs := framework.ContainerStatus(p, "app")
			return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
				strings.Contains(cs.State.Waiting.Message, why)
		})
		t.Logf("%s on the node: %s", name, framework.ContainerStatus(p, "app").State.Waiting.Message)
		var msgs []string
		poll.Within(t, 30*time.Second, name+" event in the API", func() (bool, string) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name+staticSuffix).String()})
			if err != nil {
				return false, err.Error()
			}
			msgs = msgs[:0]
			for _, e := range evs.Items {
				msgs = append(msgs, e.Type+" "+e.Reason+": "+e.Message)
				if e.Type == v1.EventTypeWarning && strings.Contains(e.Message, why) {
					return true, ""
				}
			}
			return false, strings.Join(msgs, "\n")
		})
	}
	// Refused for good: nothing of theirs ever ran.
	pods, err := n.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if _, bad := refused[strings.TrimSuffix(p.Name, staticSuffix)]; bad {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0 {
					t.Errorf("%s: container %s ran: %+v", p.Name, cs.Name, cs.State)
				}
			}
		}
	}
}
