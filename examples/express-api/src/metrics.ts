// The example's OpenTelemetry setup: an SDK meter provider whose Prometheus exporter the app serves at /metrics.
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

export interface Metrics {
  readonly meterProvider: MeterProvider;
  /** Serves the Prometheus text format; mounted by the app on its own port (no second server). */
  readonly exporter: PrometheusExporter;
}

/**
 * A meter provider with a Prometheus exporter that does not start its own server. Pass it to
 * `rateLimit({ meterProvider })`, or register it globally (`metrics.setGlobalMeterProvider`)
 * before building the limiter.
 */
export function createMetrics(): Metrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  return { meterProvider: new MeterProvider({ readers: [exporter] }), exporter };
}
