// Package options turns nodelet's command line and its KubeletConfiguration
// file into one effective Options value.
//
// nodelet is meant to drop in where the upstream kubelet ran, so the flags keep
// the upstream names and defaults and the config file is the upstream
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration. Precedence is the
// upstream one: built-in defaults, then the config file (--config), then the
// flags the user set explicitly.
//
// What nodelet does not implement is accepted but reported: upstream flags it
// ignores and config fields set to something other than their upstream default
// each produce a warning, so an operator migrating a node sees exactly which
// settings have no effect instead of having them dropped silently.
package options
