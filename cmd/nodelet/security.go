package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/admission"
	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/deviceplugin"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/security"
)

// runtimeFeatures are the optional security features of the runtime.
type runtimeFeatures struct {
	supplementalGroupsPolicy bool
	userNamespaces           bool
}

// securityFeatures asks the runtime (CRI Status) what it supports; an
// error means none, so pods needing them are refused, never run without.
func securityFeatures(ctx context.Context, client *cri.Client) runtimeFeatures {
	st, err := client.Status(ctx, false)
	if err != nil {
		klog.ErrorS(err, "Runtime status: assuming the runtime has no optional security features")
		return runtimeFeatures{}
	}
	f := runtimeFeatures{supplementalGroupsPolicy: st.GetFeatures().GetSupplementalGroupsPolicy()}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			f.userNamespaces = h.GetFeatures().GetUserNamespaces()
		}
	}
	return f
}

// podAdmission builds the pod admission checks from the flags and what the
// kernel and the runtime can enforce, then whether the pod fits on the node
// beside the active pods, in upstream's order (its security handlers come
// before its resource predicates).
func podAdmission(opts *options.Options, rt runtimeFeatures, fit *fitNode, devices *deviceplugin.Manager) (agent.AdmitFunc, error) {
	kernel := security.KernelRelease()
	sysctls, err := security.NewSysctlAllowlist(append(security.SafeSysctls(kernel), opts.AllowedUnsafeSysctls...))
	if err != nil {
		return nil, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	node := security.Node{Sysctls: sysctls, AppArmor: security.HostAppArmor(), SupplementalGroupsPolicy: rt.supplementalGroupsPolicy}
	klog.InfoS("Pod security", "kernel", kernel, "appArmor", node.AppArmor,
		"supplementalGroupsPolicyStrict", rt.supplementalGroupsPolicy, "userNamespaces", rt.userNamespaces,
		"allowedUnsafeSysctls", opts.AllowedUnsafeSysctls, "seccompDefault", opts.SeccompDefault)
	return func(p *v1.Pod, active []*v1.Pod) *security.Rejection {
		if r := security.Admit(p, node); r != nil {
			return r
		}
		// Devices before the resource predicates, as upstream's
		// resource allocation admit handler.
		if r := admitDevices(devices, p); r != nil {
			return r
		}
		if r := admission.Fit(p, active, fit.get(), pod.IsStatic(p)); r != nil {
			if devices != nil {
				if err := devices.ReleasePod(p.UID); err != nil {
					klog.ErrorS(err, "Release the devices of a refused pod", "pod", klog.KObj(p))
				}
			}
			return &security.Rejection{Reason: r.Reason, Message: r.Message}
		}
		return nil
	}, nil
}

// runtimeClasses resolves RuntimeClasses through the API server.
type runtimeClasses struct{ client kube.Interface }

func (r runtimeClasses) RuntimeHandler(ctx context.Context, name string) (string, error) {
	rc, err := r.client.RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}
