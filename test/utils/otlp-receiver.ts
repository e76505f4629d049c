import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One attribute value as OTLP/JSON spells it (`intValue` may be a string: int64 in proto3 JSON). */
interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
}

/** A span as the test reads it: ids in hex, times in ns (bigint), attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; timeNs: bigint }>;
  status: { code?: number; message?: string };
  /** The resource's attributes (service.name, …). */
  resource: Record<string, unknown>;
}

function plain(value: OtlpAnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attributesOf(list: Array<{ key: string; value: OtlpAnyValue }> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = plain(a.value);
  return out;
}

/**
 * An in-process OTLP trace receiver for tests: a real HTTP server on 127.0.0.1 that accepts OTLP/HTTP JSON
 * (`POST /v1/traces`, `content-type: application/json`, the encoding of OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and
 * keeps every span and every raw body. Any other request is answered 404; a body that is not JSON, 400.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every body received, as text (to check that no prompt text left the daemon). */
  readonly bodies: string[] = [];
  private server?: Server;
  private port = 0;

  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.receive(req).then(
        (status) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(status === 200 ? '{}' : '{"error":"bad request"}');
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private async receive(req: IncomingMessage): Promise<number> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/traces') return 404;
    const text = Buffer.concat(chunks).toString('utf8');
    this.bodies.push(text);
    let body: { resourceSpans?: unknown[] };
    try {
      body = JSON.parse(text) as { resourceSpans?: unknown[] };
    } catch {
      return 400;
    }
    type RS = {
      resource?: { attributes?: Array<{ key: string; value: OtlpAnyValue }> };
      scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
    };
    for (const rs of (body.resourceSpans ?? []) as RS[]) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: String(s.traceId),
            spanId: String(s.spanId),
            parentSpanId: typeof s.parentSpanId === 'string' ? s.parentSpanId : '',
            name: String(s.name),
            kind: Number(s.kind ?? 0),
            startNs: BigInt(String(s.startTimeUnixNano)),
            endNs: BigInt(String(s.endTimeUnixNano)),
            attributes: attributesOf(s.attributes as Array<{ key: string; value: OtlpAnyValue }>),
            events: ((s.events ?? []) as Array<{ name: string; timeUnixNano: string }>).map((e) => ({
              name: e.name,
              timeNs: BigInt(String(e.timeUnixNano)),
            })),
            status: (s.status ?? {}) as { code?: number; message?: string },
            resource,
          });
        }
      }
    }
    return 200;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /**
   * Resolves with the spans of `traceId` once `ready` says they are all there (polled every 50 ms).
   * @throws Error after `timeoutMs` with the names received so far.
   */
  async waitFor(
    traceId: string,
    ready: (spans: ReceivedSpan[]) => boolean,
    timeoutMs = 15_000,
  ): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = this.trace(traceId);
      if (ready(spans)) return spans;
      if (Date.now() > deadline) {
        throw new Error(`trace ${traceId} incomplete: ${spans.map((s) => s.name).join(', ') || 'no spans'}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
