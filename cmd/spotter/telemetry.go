package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The OpenTelemetry variables that turn tracing on and say where spans
// go (the SDK's and the OTLP exporter's own); docs/OPERATIONS.md lists
// them with the others the SDK reads (sampler, batching, resource).
const (
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// startTracing sets up OpenTelemetry's tracing for this process. W3C
// trace context (traceparent) is always read from requests and passed on
// to the replicas they are forwarded to. Spans are recorded and exported
// only when the standard variables ask for it: an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or
// OTEL_TRACES_EXPORTER=otlp; OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none keeps them off. The exporter speaks
// http/protobuf unless OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL says grpc.
// instance names this process in the spans' resource
// (service.instance.id; a replica's id). The caller must call the
// returned shutdown, which sends the spans still buffered.
func startTracing(ctx context.Context, getenv func(string) string, instance, version string, log *slog.Logger) (shutdown func(context.Context) error, on bool, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	none := func(context.Context) error { return nil }
	exporter := strings.ToLower(strings.TrimSpace(getenv(envExporter)))
	switch {
	case strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true"), exporter == "none":
		return none, false, nil
	case exporter != "" && exporter != "otlp":
		return nil, false, fmt.Errorf("%s=%s: spotter exports traces with OTLP only (otlp or none)", envExporter, exporter)
	case exporter == "" && getenv(envEndpoint) == "" && getenv(envTracesEndpoint) == "":
		return none, false, nil
	}
	protocol := strings.TrimSpace(getenv(envTracesProtocol))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv(envProtocol))
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, false, fmt.Errorf("%s=%s: want http/protobuf or grpc", envProtocol, protocol)
	}
	if err != nil {
		return nil, false, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// The defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// win over them.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName("spotter"), semconv.ServiceVersion(version), semconv.ServiceInstanceID(instance)),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, false, errors.Join(fmt.Errorf("trace resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
	return tp.Shutdown, true, nil
}
