import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { DaemonConfig } from '../../config';
import { HostPolicy } from '../../security';
import { MetricsService } from './metrics.service';

/**
 * What the metrics listener answers a request (pure): from its method, path, whether an Origin header came, and
 * whether its Host header passes the DNS-rebinding guard (HostPolicy, as on the main listener: checked only when the
 * listener is bound to a loopback address).
 */
export function metricsListenerAnswer(
  method: string,
  url: string,
  hasOrigin: boolean,
  hostAllowed = true,
): { status: 200 | 403 | 404 | 405; error?: string } {
  const path = url.split('?')[0].replace(/\/+$/, '');
  if (path !== '/metrics') return { status: 404, error: 'not found: this listener serves GET /metrics only' };
  if (method !== 'GET' && method !== 'HEAD') return { status: 405, error: 'method not allowed' };
  // No web page may read it: a browser always sends Origin on a cross-origin fetch; scrapers never do.
  if (hasOrigin) return { status: 403, error: 'requests with an Origin header are refused on the metrics listener' };
  // A page that rebinds its own name to 127.0.0.1 reads same-origin, without Origin: its Host names it.
  if (!hostAllowed) return { status: 403, error: 'host not allowed on a loopback bind' };
  return { status: 200 };
}

/**
 * LLAMAD_METRICS_ADDR (issue 34 item 2; docs/security.md "Metrics listener"): a second HTTP listener, started with
 * the application (onApplicationBootstrap, so main.ts and the tests get it from createApp alike) and closed with it,
 * that serves GET /metrics only — the same text as the main listener's route (MetricsService.render) — without API
 * keys, for in-cluster scrapers that cannot send a bearer token (the inference gateway's endpoint picker supports
 * mTLS only). Every other path answers 404, other methods 405, and a request carrying an `Origin` header 403, so no
 * web page can read it (on a loopback bind, a Host that is not this machine's is refused too: Ollama's DNS-rebinding
 * guard, src/security/host-policy.ts). Nothing else of the daemon is reachable through it. Without the setting it does nothing.
 */
@Injectable()
export class MetricsListener implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Metrics');
  private server?: FastifyInstance;

  constructor(
    private readonly metrics: MetricsService,
    @Optional() @Inject(DaemonConfig) private readonly config?: DaemonConfig,
  ) {}

  /**
   * Binds LLAMAD_METRICS_ADDR (when set).
   * @throws the listen error (address in use, not assignable): the start-up fails rather than run without metrics.
   */
  async onApplicationBootstrap(): Promise<void> {
    const addr = this.config?.metricsAddr;
    if (!addr || this.server) return;
    const server: FastifyInstance = new FastifyAdapter({ forceCloseConnections: true }).getInstance();
    const hosts = new HostPolicy(() => this.address()?.address);
    server.all('*', async (request, reply) => {
      const answer = metricsListenerAnswer(
        request.method,
        request.url,
        request.headers.origin !== undefined,
        hosts.allows(request.headers.host),
      );
      if (answer.status !== 200) {
        if (answer.status === 405) void reply.header('allow', 'GET, HEAD');
        return reply.code(answer.status).send({ error: answer.error });
      }
      const text = await this.metrics.render();
      return reply.code(200).header('content-type', this.metrics.contentType).send(text);
    });
    const host = addr.host === '' ? '0.0.0.0' : addr.host;
    await server.listen({ host, port: addr.port });
    this.server = server;
    const bound = this.address();
    this.logger.log(`metrics listener on ${host}:${bound?.port ?? addr.port} (GET /metrics only, no API keys)`);
  }

  /** The bound address, or undefined when not listening (tests read the port of `:0`). */
  address(): AddressInfo | undefined {
    const address = this.server?.server.address();
    return typeof address === 'object' && address ? address : undefined;
  }

  /** Closes the listener with the application. */
  async onModuleDestroy(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
  }
}
