package options

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// upstreamDefaultsYAML holds upstream's v1beta1 defaults for fields nodelet
// ignores. Config generators (kubeadm among them) write many of these out
// explicitly; a field equal to its upstream default changes nothing, so it is
// not worth a warning. Fields missing here are warned about whenever set.
const upstreamDefaultsYAML = `
registryPullQPS: 5
registryBurst: 10
eventRecordQPS: 50
eventBurst: 100
enableDebuggingHandlers: true
oomScoreAdj: -999
streamingConnectionIdleTimeout: 4h
nodeStatusReportFrequency: 5m
volumeStatsAggPeriod: 1m
cgroupsPerQOS: true
cgroupDriver: cgroupfs
cpuManagerPolicy: none
cpuManagerReconcilePeriod: 10s
memoryManagerPolicy: None
topologyManagerPolicy: none
topologyManagerScope: container
runtimeRequestTimeout: 2m
hairpinMode: promiscuous-bridge
podPidsLimit: -1
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
nodeStatusMaxImages: 50
maxOpenFiles: 1000000
contentType: application/vnd.kubernetes.protobuf
kubeAPIQPS: 50
kubeAPIBurst: 100
serializeImagePulls: true
evictionHard:
  memory.available: 100Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
  imagefs.available: 15%
  imagefs.inodesFree: 5%
evictionPressureTransitionPeriod: 5m
mergeDefaultEvictionSettings: false
enableControllerAttachDetach: true
makeIPTablesUtilChains: true
iptablesMasqueradeBit: 14
iptablesDropBit: 15
failSwapOn: true
containerLogMaxWorkers: 1
containerLogMonitorInterval: 10s
configMapAndSecretChangeDetectionStrategy: Watch
enforceNodeAllocatable: [pods]
volumePluginDir: /usr/libexec/kubernetes/kubelet-plugins/volume/exec/
failCgroupV1: false
memoryThrottlingFactor: 0.9
localStorageCapacityIsolation: true
authentication:
  webhook:
    cacheTTL: 2m
authorization:
  webhook:
    cacheAuthorizedTTL: 5m
    cacheUnauthorizedTTL: 30s
logging:
  format: text
  flushFrequency: 5s
`

// upstreamDefaults decodes upstreamDefaultsYAML once. The text is a constant
// checked by the tests, so a decoding failure is a programming error.
var upstreamDefaults = sync.OnceValue(func() *kubeletconfigv1beta1.KubeletConfiguration {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(upstreamDefaultsYAML), kc); err != nil {
		panic(fmt.Sprintf("options: bad upstream defaults table: %v", err))
	}
	return kc
})

// unsupportedFieldWarnings names every field the file sets that nodelet does
// not honour, unless it is set to its upstream default. It walks the struct by
// reflection rather than listing the unsupported fields, so a field added to
// KubeletConfiguration upstream is reported instead of silently dropped. The
// fields nodelet may not ignore (refusedFields) come back as errors instead.
func unsupportedFieldWarnings(kc *kubeletconfigv1beta1.KubeletConfiguration) ([]string, []error) {
	return splitFieldFindings(unsupportedFields(kc))
}

// unsupportedFields returns the JSON paths of the fields unsupportedFieldWarnings
// reports.
func unsupportedFields(kc *kubeletconfigv1beta1.KubeletConfiguration) []string {
	supported := make(map[string]bool, len(supportedConfigFields))
	for _, p := range supportedConfigFields {
		supported[p] = true
	}
	var out []string
	walkUnsupported(reflect.ValueOf(kc).Elem(), reflect.ValueOf(upstreamDefaults()).Elem(), "", supported, &out)
	return out
}

func walkUnsupported(v, def reflect.Value, prefix string, supported map[string]bool, out *[]string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		// Embedded TypeMeta: kind and apiVersion are checked when decoding.
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if supported[path] {
			continue
		}
		fv, dv := v.Field(i), def.Field(i)
		// Descend only where part of the struct is supported, so that
		// "logging.format" is named but "memorySwap" is named as a whole.
		if f.Type.Kind() == reflect.Struct && hasSupportedChild(path, supported) {
			walkUnsupported(fv, dv, path, supported, out)
			continue
		}
		if !isSet(fv) || sameJSON(fv, dv) {
			continue
		}
		*out = append(*out, path)
	}
}

// jsonName is the field's name in the file, or "" for fields never serialized.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func hasSupportedChild(path string, supported map[string]bool) bool {
	for p := range supported {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// isSet reports whether the file gave v a value. Values are compared by their
// JSON form because several field types (quantities, durations) decode a
// written zero ("0", "0s") into something reflect does not consider zero.
func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() > 0
	}
	return !sameJSON(v, reflect.Zero(v.Type()))
}

func sameJSON(a, b reflect.Value) bool {
	ja, errA := json.Marshal(a.Interface())
	jb, errB := json.Marshal(b.Interface())
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
