package config

import (
	"net/http"

	"k8s.io/klog/v2"
)

// Reporter receives manifest problems from the file and URL sources: a file
// or body that does not decode or validate, a duplicate pod name, an
// unreachable URL. Each distinct problem is reported once, not on every
// re-list, so an implementation can turn each call into an event.
type Reporter interface {
	// ManifestError reports that the manifest at location (file path or URL)
	// of source (pod.FileSource, pod.HTTPSource) cannot be used.
	ManifestError(source, location string, err error)
}

// LogReporter is the default Reporter: it logs.
type LogReporter struct{}

// ManifestError implements Reporter.
func (LogReporter) ManifestError(source, location string, err error) {
	klog.ErrorS(err, "Unusable pod manifest", "source", source, "location", location)
}

// SourceOption configures a file or URL source.
type SourceOption func(*sourceOptions)

type sourceOptions struct {
	reporter  Reporter
	client    *http.Client
	adoptions *Adoptions
}

// WithReporter sends manifest errors to r instead of the log.
func WithReporter(r Reporter) SourceOption {
	return func(o *sourceOptions) { o.reporter = r }
}

// WithHTTPClient makes the URL source use c (for TLS settings, proxies, or
// a different timeout). The file source ignores it.
func WithHTTPClient(c *http.Client) SourceOption {
	return func(o *sourceOptions) { o.client = c }
}

func buildSourceOptions(opts []SourceOption) sourceOptions {
	o := sourceOptions{reporter: LogReporter{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.reporter == nil {
		o.reporter = LogReporter{}
	}
	return o
}
