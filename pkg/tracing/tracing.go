// Package tracing owns nodelet's OpenTelemetry tracer provider: built from
// the KubeletConfiguration's tracing section as upstream builds the kubelet's
// (OTLP over gRPC, insecure, parent-based sampling at samplingRatePerMillion),
// or a no-op provider when the section is absent, so that the spans around
// pod syncs and CRI calls cost nothing unless an operator asked for them.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// ServiceName is the service.name of nodelet's spans: the kubelet's, so that
// trace queries and dashboards written for the kubelet find a nodelet node.
const ServiceName = "kubelet"

// Scope is the instrumentation scope of the spans nodelet itself starts.
const Scope = "github.com/nodelet/nodelet"

// Provider is a tracer provider that must be shut down to flush what it
// batched.
type Provider interface {
	trace.TracerProvider
	Shutdown(ctx context.Context) error
}

// Enabled reports whether cfg asks for spans to be exported.
func Enabled(cfg *tracingapi.TracingConfiguration) bool { return cfg != nil }

// NewProvider builds the provider cfg asks for (nil: a no-op one). The
// exporter connects lazily: an endpoint that is down costs dropped spans,
// never a failed start, as upstream.
func NewProvider(ctx context.Context, cfg *tracingapi.TracingConfiguration, hostname string) (Provider, error) {
	if !Enabled(cfg) {
		return noopProvider{noop.NewTracerProvider()}, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithInsecure()}
	if cfg.Endpoint != nil {
		opts = append(opts, otlptracegrpc.WithEndpoint(*cfg.Endpoint))
	}
	exporter, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceNameKey.String(ServiceName), semconv.HostNameKey.String(hostname))
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(Sampler(cfg)),
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
	), nil
}

// Sampler is upstream's: a span whose parent was sampled is sampled; a root
// span is sampled at samplingRatePerMillion, never when that is unset or 0.
func Sampler(cfg *tracingapi.TracingConfiguration) sdktrace.Sampler {
	root := sdktrace.NeverSample()
	if cfg.SamplingRatePerMillion != nil && *cfg.SamplingRatePerMillion > 0 {
		root = sdktrace.TraceIDRatioBased(float64(*cfg.SamplingRatePerMillion) / 1e6)
	}
	return sdktrace.ParentBased(root)
}

type noopProvider struct{ noop.TracerProvider }

func (noopProvider) Shutdown(context.Context) error { return nil }

// Propagators carry the trace context to the runtime in the gRPC metadata
// (W3C traceparent), so a runtime that traces continues nodelet's traces.
func Propagators() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// GRPCClientHandler is the stats handler that gives every call of a gRPC
// client (the CRI runtime) its span, named after the method as upstream's
// ("runtime.v1.RuntimeService/RunPodSandbox").
func GRPCClientHandler(tp trace.TracerProvider) stats.Handler {
	return otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(Propagators()))
}

// GRPCDialOptions are the dial options that trace a client's calls with tp;
// none for a no-op provider, so an untraced node pays nothing per call.
func GRPCDialOptions(tp trace.TracerProvider) []grpc.DialOption {
	if tp == nil {
		return nil
	}
	if _, off := tp.(noopProvider); off {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(GRPCClientHandler(tp))}
}

// PodAttributes are the attributes upstream's kubelet puts on a pod sync
// span.
func PodAttributes(namespace, name, uid, updateType string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.K8SPodUIDKey.String(uid),
		attribute.String("k8s.pod", namespace+"/"+name),
		semconv.K8SPodNameKey.String(name),
		attribute.String("k8s.pod.update_type", updateType),
		semconv.K8SNamespaceNameKey.String(namespace),
	}
}
