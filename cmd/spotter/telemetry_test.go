package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
)

// Tracing is on only when the standard variables ask for it, and a
// variable spotter cannot honour is refused at start, naming it.
func TestStartTracing(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	log := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{env: nil, on: false},
		{env: map[string]string{envEndpoint: "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{envTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{envExporter: "otlp"}, on: true},
		{env: map[string]string{envEndpoint: "http://127.0.0.1:4317", envProtocol: "grpc"}, on: true},
		{env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envSDKDisabled: "true"}, on: false},
		{env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envExporter: "none"}, on: false},
		{env: map[string]string{envExporter: "zipkin"}, wantErr: envExporter},
		{env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envProtocol: "http/json"}, wantErr: envProtocol},
	} {
		for _, k := range []string{envSDKDisabled, envExporter, envEndpoint, envTracesEndpoint, envProtocol, envTracesProtocol} {
			t.Setenv(k, tt.env[k])
		}
		shutdown, on, err := startTracing(t.Context(), os.Getenv, "replica-1", "test", log)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("startTracing(%v) = %v, want an error naming %s", tt.env, err, tt.wantErr)
			}
			continue
		case err != nil:
			t.Errorf("startTracing(%v) = %v", tt.env, err)
			continue
		}
		if on != tt.on {
			t.Errorf("startTracing(%v) on = %v, want %v", tt.env, on, tt.on)
		}
		if err := shutdown(t.Context()); err != nil {
			t.Errorf("startTracing(%v): shutdown: %v", tt.env, err)
		}
	}
}

// serve's logging and metrics flags are checked before anything starts.
func TestServeObservabilityFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--metrics-addr", "127.0.0.1:99999"}, "--metrics-addr"},
	} {
		var out, errOut bytes.Buffer
		err := serveCmd(t.Context(), append([]string{"--data", t.TempDir(), "--addr", "127.0.0.1:0", "--isolate", "none"}, tt.args...), &out, &errOut)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v = %v, want exit 2 naming %s", tt.args, err, tt.want)
		}
	}
}
