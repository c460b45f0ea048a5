package node

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/eviction"
)

// Labels and annotations the node sets on itself, as upstream. The beta
// os/arch labels are still set because old node selectors use them.
const (
	labelOSBeta   = "beta.kubernetes.io/os"
	labelArchBeta = "beta.kubernetes.io/arch"
	// AnnotationControllerManagedAttachDetach tells the attach/detach
	// controller that it, not the node, attaches volumes here.
	AnnotationControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
	// AnnotationProvidedNodeIP tells an external cloud provider the node's
	// --node-ip, so it reports the address the node was told to use.
	AnnotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
	// TaintExternalCloudProvider keeps pods off a Node registered with
	// --cloud-provider=external until the cloud controller manager has
	// initialised it (and removed the taint).
	TaintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"
)

// defaultHardEviction are upstream's default hard eviction thresholds, used
// when Config.HardEviction is nil. nodelet does not evict: the thresholds
// lower allocatable and set MemoryPressure, so the scheduler's view of this
// node is what it would be with the upstream kubelet.
var defaultHardEviction = func() []eviction.Threshold {
	t, err := eviction.ParseMap(eviction.DefaultHard())
	if err != nil {
		panic(fmt.Sprintf("node: bad default eviction thresholds: %v", err))
	}
	return t
}()

const (
	// pidPressurePercent: fewer free PIDs than this share of the limit is
	// PID pressure.
	pidPressurePercent = 10
	// maxImagesInStatus and maxNamesPerImage bound status.images, as
	// upstream, so the Node object stays small.
	maxImagesInStatus = 50
	maxNamesPerImage  = 5
)

// Condition reasons and messages, as upstream, because tools and humans
// grep for them.
const (
	reasonReady               = "KubeletReady"
	reasonNotReady            = "KubeletNotReady"
	reasonSufficientMemory    = "KubeletHasSufficientMemory"
	reasonInsufficientMemory  = "KubeletHasInsufficientMemory"
	reasonNoDiskPressure      = "KubeletHasNoDiskPressure"
	reasonDiskPressure        = "KubeletHasDiskPressure"
	reasonSufficientPID       = "KubeletHasSufficientPID"
	reasonInsufficientPID     = "KubeletHasInsufficientPID"
	messageReady              = "kubelet is posting ready status"
	messageSufficientMemory   = "kubelet has sufficient memory available"
	messageInsufficientMemory = "kubelet has insufficient memory available"
	messageNoDiskPressure     = "kubelet has no disk pressure"
	messageDiskPressure       = "kubelet has disk pressure"
	messageSufficientPID      = "kubelet has sufficient PID available"
	messageInsufficientPID    = "kubelet has insufficient PID available"
)

// ownConditions are the condition types nodelet owns, in the order they are
// appended to a new Node: Ready last, as upstream, because old clients read
// the last condition as the node's readiness.
var ownConditions = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}

// defaultLabels are the labels the node keeps set on itself.
func defaultLabels(cfg Config) map[string]string {
	return map[string]string{
		v1.LabelHostname:   cfg.Hostname,
		v1.LabelOSStable:   cfg.OS,
		v1.LabelArchStable: cfg.Arch,
		labelOSBeta:        cfg.OS,
		labelArchBeta:      cfg.Arch,
	}
}

// InitialNode is the Node to create: default labels, then --node-labels (an
// explicit label wins over a default, as upstream), --register-with-taints
// and, with an external cloud provider, the uninitialized taint after them,
// --provider-id, and a full status. cfg must have its defaults applied.
func InitialNode(cfg Config, f Facts, now time.Time) *v1.Node {
	labels := defaultLabels(cfg)
	maps.Copy(labels, cfg.Labels)
	taints := slices.Clone(cfg.Taints)
	if cfg.ExternalCloudProvider && !slices.ContainsFunc(taints, func(t v1.Taint) bool {
		return t.Key == TaintExternalCloudProvider && t.Effect == v1.TaintEffectNoSchedule
	}) {
		taints = append(taints, v1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule})
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cfg.NodeName,
			Labels:      labels,
			Annotations: ownAnnotations(cfg),
		},
		Spec:   v1.NodeSpec{Taints: taints, ProviderID: cfg.ProviderID},
		Status: DesiredStatus(cfg, f, v1.NodeStatus{}, now),
	}
}

// ownAnnotations are the annotations the node keeps set on itself.
func ownAnnotations(cfg Config) map[string]string {
	a := map[string]string{AnnotationControllerManagedAttachDetach: "true"}
	if cfg.ExternalCloudProvider && cfg.NodeIPGiven && len(cfg.NodeIPs) > 0 {
		a[AnnotationProvidedNodeIP] = strings.Join(cfg.NodeIPs, ",")
	}
	return a
}

// ReconcileExisting returns the Node that was already registered with the
// default labels and annotations of cfg restored, and whether anything
// changed. --node-labels are not re-applied: as upstream they are set at
// creation only, so a label an administrator changed since stays changed.
func ReconcileExisting(existing *v1.Node, cfg Config) (*v1.Node, bool) {
	want := InitialNode(cfg, Facts{}, time.Time{})
	out := existing.DeepCopy()
	changed := false
	for k := range defaultLabels(cfg) {
		if v, ok := out.Labels[k]; !ok || v != want.Labels[k] {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = want.Labels[k]
			changed = true
		}
	}
	for k, v := range want.Annotations {
		if out.Annotations[k] != v {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
			changed = true
		}
	}
	// A provided IP left from an earlier start with other flags would make
	// the cloud provider report a stale address, as upstream removes it.
	if _, stale := out.Annotations[AnnotationProvidedNodeIP]; stale {
		if _, wanted := want.Annotations[AnnotationProvidedNodeIP]; !wanted {
			delete(out.Annotations, AnnotationProvidedNodeIP)
			changed = true
		}
	}
	return out, changed
}

// DesiredStatus computes the node status from the facts, starting from the
// status the API server has (old). What nodelet does not own (other
// conditions, extended resources, volumes) is kept; what is unknown this
// time keeps its old value. Heartbeats of nodelet's conditions are now; a
// transition time moves only when a condition's status changes.
func DesiredStatus(cfg Config, f Facts, old v1.NodeStatus, now time.Time) v1.NodeStatus {
	st := *old.DeepCopy()
	st.Capacity = capacity(cfg, f.Machine, st.Capacity)
	st.Allocatable = allocatable(st.Capacity, st.Allocatable, reservation(cfg, st.Capacity))
	setDevices(&st, f.Devices)

	st.Addresses = addresses(cfg, old.Addresses)
	st.DaemonEndpoints.KubeletEndpoint.Port = cfg.KubeletPort

	info := &st.NodeInfo
	setIfKnown(&info.MachineID, f.Machine.MachineID)
	setIfKnown(&info.SystemUUID, f.Machine.SystemUUID)
	setIfKnown(&info.BootID, f.Machine.BootID)
	setIfKnown(&info.KernelVersion, f.Machine.KernelVersion)
	setIfKnown(&info.OSImage, f.Machine.OSImage)
	setIfKnown(&info.ContainerRuntimeVersion, f.RuntimeVersion)
	info.KubeletVersion = cfg.Version
	info.OperatingSystem = cfg.OS
	info.Architecture = cfg.Arch

	if f.Images != nil {
		st.Images = f.Images
	}

	t := metav1.NewTime(now)
	for _, c := range []v1.NodeCondition{
		memoryCondition(f, hardEviction(cfg)), diskCondition(f), pidCondition(f), readyCondition(f, st.Capacity),
	} {
		st.Conditions = setCondition(st.Conditions, c, t)
	}
	return st
}

func setIfKnown(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// capacity is the machine's capacity over the old one: known figures
// replace old ones, the rest (unknown this time, or resources others such
// as device plugins added) stays.
func capacity(cfg Config, m Machine, old v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	maps.Copy(out, old)
	if m.CPUs > 0 {
		out[v1.ResourceCPU] = *resource.NewMilliQuantity(m.CPUs*1000, resource.DecimalSI)
	}
	if m.MemoryBytes > 0 {
		out[v1.ResourceMemory] = *resource.NewQuantity(m.MemoryBytes, resource.BinarySI)
	}
	if m.EphemeralStorageBytes > 0 {
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(m.EphemeralStorageBytes, resource.BinarySI)
	}
	out[v1.ResourcePods] = *resource.NewQuantity(int64(cfg.MaxPods), resource.DecimalSI)
	for size, total := range m.HugePages {
		out[hugePageResource(size)] = *resource.NewQuantity(total, resource.BinarySI)
	}
	return out
}

func hugePageResource(size int64) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
}

func hardEviction(cfg Config) []eviction.Threshold {
	if cfg.HardEviction == nil {
		return defaultHardEviction
	}
	return cfg.HardEviction
}

// reservation is what allocatable leaves out of capacity, as upstream:
// --kube-reserved + --system-reserved + the hard eviction thresholds
// (memory.available from memory, nodefs.available from ephemeral storage).
func reservation(cfg Config, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, rl := range []v1.ResourceList{cfg.Reserved, eviction.Reservation(hardEviction(cfg), capacity)} {
		for name, q := range rl {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// allocatable is capacity less the reserve, and memory also less the huge
// pages (they are not usable as ordinary memory), never below zero.
// Resources allocatable does not derive from capacity keep their old
// values.
func allocatable(capacity, old, reserve v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	maps.Copy(out, old)
	for name, q := range capacity {
		q = q.DeepCopy()
		if r, ok := reserve[name]; ok {
			q.Sub(r)
		}
		if name == v1.ResourceMemory {
			for hp, size := range capacity {
				if strings.HasPrefix(string(hp), v1.ResourceHugePagesPrefix) {
					q.Sub(size)
				}
			}
		}
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[name] = q
	}
	return out
}

// addresses: the InternalIPs, then the Hostname, as upstream without a cloud
// provider. The API server reaches nodelet through the first it prefers.
// With an external cloud provider, as upstream: the addresses the Node has
// (the provider's) are kept; a Node with none gets the --node-ip ones to
// start with, or only the Hostname when --node-ip was not given (a
// detected IP may not be the one the provider reports).
func addresses(cfg Config, old []v1.NodeAddress) []v1.NodeAddress {
	if cfg.ExternalCloudProvider {
		if len(old) > 0 {
			return old
		}
		if !cfg.NodeIPGiven {
			return []v1.NodeAddress{{Type: v1.NodeHostName, Address: cfg.Hostname}}
		}
	}
	var out []v1.NodeAddress
	for _, ip := range cfg.NodeIPs {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: cfg.Hostname})
}

// memoryCondition is MemoryPressure when available memory is under the
// memory.available hard threshold (none: never). Percentages are of the
// machine's memory.
func memoryCondition(f Facts, hard []eviction.Threshold) v1.NodeCondition {
	limit := int64(-1)
	for _, t := range hard {
		if t.Signal != eviction.SignalMemoryAvailable {
			continue
		}
		if t.Quantity != nil {
			limit = t.Quantity.Value()
		} else {
			limit = int64(t.Percentage * float64(f.Machine.MemoryBytes))
		}
	}
	if f.MemoryAvailable >= 0 && f.MemoryAvailable < limit {
		return v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue, Reason: reasonInsufficientMemory, Message: messageInsufficientMemory}
	}
	return v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: reasonSufficientMemory, Message: messageSufficientMemory}
}

func diskCondition(f Facts) v1.NodeCondition {
	if f.DiskPressure {
		return v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: reasonDiskPressure, Message: messageDiskPressure}
	}
	return v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: reasonNoDiskPressure, Message: messageNoDiskPressure}
}

func pidCondition(f Facts) v1.NodeCondition {
	if f.PIDsMax > 0 && (f.PIDsMax-f.PIDsInUse)*100 < f.PIDsMax*pidPressurePercent {
		return v1.NodeCondition{Type: v1.NodePIDPressure, Status: v1.ConditionTrue, Reason: reasonInsufficientPID, Message: messageInsufficientPID}
	}
	return v1.NodeCondition{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: reasonSufficientPID, Message: messageSufficientPID}
}

// readyCondition is Ready unless the runtime cannot run pods or the node
// cannot say what it has room for (the scheduler would place pods on a node
// with no capacity).
func readyCondition(f Facts, capacity v1.ResourceList) v1.NodeCondition {
	errs := append([]string(nil), f.RuntimeErrors...)
	var missing []string
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		if _, ok := capacity[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Sprintf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	if len(errs) > 0 {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: reasonNotReady, Message: strings.Join(errs, "; ")}
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: reasonReady, Message: messageReady}
}

// setCondition puts want into conds with heartbeat now, keeping the old
// transition time when the status did not change.
func setCondition(conds []v1.NodeCondition, want v1.NodeCondition, now metav1.Time) []v1.NodeCondition {
	want.LastHeartbeatTime = now
	want.LastTransitionTime = now
	for i := range conds {
		if conds[i].Type != want.Type {
			continue
		}
		if conds[i].Status == want.Status {
			want.LastTransitionTime = conds[i].LastTransitionTime
		}
		conds[i] = want
		return conds
	}
	return append(conds, want)
}

// condition returns the condition of type t, or nil.
func condition(conds []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// IsReady reports whether the status says Ready=True.
func IsReady(st v1.NodeStatus) bool {
	c := condition(st.Conditions, v1.NodeReady)
	return c != nil && c.Status == v1.ConditionTrue
}

// RuntimeImage is one image as the container runtime lists it.
type RuntimeImage struct {
	Names     []string
	SizeBytes int64
}

// NodeImages picks status.images: the largest images first (they matter
// most to the scheduler's image locality), at most 50, each with at most
// five names. Images without a name are left out.
func NodeImages(imgs []RuntimeImage) []v1.ContainerImage {
	out := make([]v1.ContainerImage, 0, min(len(imgs), maxImagesInStatus))
	sorted := append([]RuntimeImage(nil), imgs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SizeBytes > sorted[j].SizeBytes })
	for _, img := range sorted {
		if len(out) == maxImagesInStatus {
			break
		}
		if len(img.Names) == 0 {
			continue
		}
		names := img.Names
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: append([]string(nil), names...), SizeBytes: img.SizeBytes})
	}
	return out
}

// LocalNode is the Node as nodelet would register it, built from cfg and
// the machine's facts alone: what admission judges pods against where
// there is no API server, or before the Node is registered.
func LocalNode(cfg Config, f Facts, now time.Time) (*v1.Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return InitialNode(cfg, f, now), nil
}
