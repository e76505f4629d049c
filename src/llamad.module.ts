import {
  ConfigurableModuleBuilder,
  DynamicModule,
  Module,
  OnModuleDestroy,
  OnModuleInit,
  Provider,
  Type,
} from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost, RouterModule } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import {
  AppController,
  ChatController,
  EmbedController,
  EventsController,
  GenerateController,
  PsController,
  BlobsController,
  ModelsController,
  RegistryController,
  TokenizeController,
  LlamaServerTokenizeController,
  RerankController,
} from './api/ollama';
import { CommonModule } from './common/common.module';
import { AnthropicController } from './api/anthropic';
import { CompatModule } from './api';
import { OpenAIController, OpenAIRerankController } from './api/openai';
import { AudioController } from './api/openai/audio';
import {
  InMemoryResponsesStore,
  RedisResponsesStore,
  RESPONSES_STORE,
  ResponsesController,
} from './api/openai/responses';
import { DaemonConfig } from './config/daemon-config';
import { LlamadService } from './api/ollama/llamad.service';
import { InferenceModule, GoTemplateRenderer, TEMPLATE_RENDERER } from './generation';
import { DefaultRunnerFactory, RUNNER_FACTORY, RunnerFactory } from './runner';
import { MODEL_STORE } from './models/model-store';
import { ModelsModule } from './models/models.module';
import { loadBinding } from './native/load-binding';
import { NATIVE_BINDING, NativeBindingLoader } from './native/native.tokens';
import {
  GenerationHooksModule,
  GenerationHooksRegistry,
  InMemoryModelEvents,
  MODEL_EVENTS,
  REQUEST_HOOKS,
  RequestHooksValue,
} from './observability';
import {
  InMemoryUsageStore,
  OPERATIONS_CONTROLLERS,
  OperationsModule,
  USAGE_CONTROLLERS,
  USAGE_STORE,
} from './operations';
import { RegistryModule } from './registry/registry.module';
import { MEMORY_PROBE, SystemMemoryProbe } from './scheduler';
import { ApiKeyAuthorizer, AUTHORIZER, RequestAuthorizer } from './security/authorizer';
import { installRequestAuthorization, renderWithRouteFilter } from './security/request-authorization';
import { PrincipalPolicySource, TENANT_POLICY_SOURCE, TenantPolicySource } from './security/tenant-policy-source';
import { installRequestGate } from './security/request-gate';
import { installUnroutedAnswer } from './security/unrouted-request';
import { routeMarks } from './security/route-marks';
import { installWebUi, WEB_UI_PATH } from './ui';
import {
  admitRequest,
  createRedisClient,
  FlexibleRateLimitStore,
  RATE_LIMIT_STORE,
  REDIS_CLIENT,
  RedisClientCloser,
  RequestTokenBudget,
  TenantLimiter,
  TOKEN_BUDGET,
} from './security/limits';

/** An HTTP API surface the module can mount. */
export type LlamadSurface = 'native' | 'openai' | 'anthropic';

/** Every surface, the default. */
export const ALL_SURFACES: readonly LlamadSurface[] = ['native', 'openai', 'anthropic'];

/**
 * Options of LlamadModule that may come from a factory (`forRootAsync`): the daemon's settings.
 */
export interface LlamadModuleOptions {
  /**
   * Settings (a DaemonConfig, or the fields that differ from its defaults: `modelsDir`, `numParallel`,
   * `keepAliveMs`, `origins`, `apiKeys`, …). The environment is NOT read by the library: pass
   * `loadConfig(process.env)` to get the daemon's environment handling (OLLAMA_MODELS, OLLAMA_NUM_PARALLEL, …).
   */
  config?: Partial<DaemonConfig>;
}

/**
 * Options that shape the module itself, so they are given to `forRoot`/`forRootAsync` directly (never by a factory).
 */
export interface LlamadModuleExtras {
  /**
   * Which HTTP APIs to mount: `native` (/api/*, GET /), `openai` (/v1/*), `anthropic` (/v1/messages). Default all;
   * `[]` mounts none (LlamadService only).
   */
  surfaces?: readonly LlamadSurface[];
  /** Route prefix of every mounted route, e.g. `/llm` → `/llm/api/chat`, `/llm/v1/chat/completions`. Default none. */
  prefix?: string;
  /**
   * Install the Origin/Host gate and CORS (reference/ollama-api.md §1.2, §1.3; docs/security.md) as a Fastify
   * `onRequest` hook on the module's paths (under `prefix`; without a prefix `/`, `/api/*` and `/v1/*`). Default
   * true; with it, a request under those paths that matches no route is answered by the application's not-found
   * handler before its body is read. The daemon passes false: it installs both on every path itself.
   */
  requestGate?: boolean;
  /**
   * Serve the built-in web UI (docs/ui.md) at `<prefix>/ui` (after the host's global prefix), behind the same request
   * gate; it calls the module's routes relative to that path, so it needs the `native` surface. Default false; the
   * daemon passes DaemonConfig.ui (LLAMAD_UI, on unless `0`).
   */
  ui?: boolean;
  /**
   * Providers that replace the defaults of the extension tokens: AUTHORIZER, TENANT_POLICY_SOURCE, MODEL_STORE,
   * RUNNER_FACTORY, MEMORY_PROBE, TEMPLATE_RENDERER, REQUEST_HOOKS, MODEL_EVENTS, NATIVE_BINDING, RESPONSES_STORE, USAGE_STORE,
   * RATE_LIMIT_STORE, REDIS_CLIENT, TOKEN_BUDGET (docs/library.md). They may inject DaemonConfig and whatever the
   * modules in `imports` export.
   */
  providers?: Provider[];
  /** Modules whose exports the `providers` (and an async options factory) may inject. */
  imports?: NonNullable<DynamicModule['imports']>;
}

const EXTRAS_DEFAULTS: Required<Omit<LlamadModuleExtras, 'imports'>> & Pick<LlamadModuleExtras, 'imports'> = {
  surfaces: ALL_SURFACES,
  prefix: '',
  requestGate: true,
  ui: false,
  providers: [],
  imports: undefined,
};

/** The controllers of each surface. */
const SURFACE_CONTROLLERS: Record<LlamadSurface, Type<unknown>[]> = {
  native: [
    AppController,
    GenerateController,
    ChatController,
    EmbedController,
    PsController,
    EventsController,
    ModelsController,
    BlobsController,
    RegistryController,
    TokenizeController,
    LlamaServerTokenizeController,
    RerankController,
    ...USAGE_CONTROLLERS,
  ],
  openai: [OpenAIController, ResponsesController, OpenAIRerankController, AudioController],
  anthropic: [AnthropicController],
};

/** What the module was mounted with, for the request gate. */
const LLAMAD_MOUNT = Symbol('LLAMAD_MOUNT');

interface LlamadMount {
  prefix: string;
  surfaces: readonly LlamadSurface[];
  requestGate: boolean;
  ui: boolean;
}

/** `llm`, `/llm/` → `/llm`; `''`, `/` → `''`. */
export function normalizePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').trim().replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `/${trimmed}`;
}

/** Whether a request path belongs to the module's routes (for the request gate). */
export function isModulePath(path: string, prefix: string): boolean {
  if (prefix !== '') return path === prefix || path.startsWith(`${prefix}/`);
  return (
    path === '/' || /^\/(?:api|v1)(?:\/|$)/.test(path) || /^\/(?:metrics|health|ready|tokenize|detokenize)$/.test(path)
  );
}

/** Holds the config, the addon loader and the extension tokens (internal; shared by every internal module). */
@Module({})
class LlamadCoreModule {}

/** Holds LlamadService (internal). */
@Module({})
class LlamadFacadeModule {}

/** Holds the mounted controllers, under the route prefix (internal). */
@Module({})
class LlamadHttpModule {}

/**
 * Installs, on the host's Fastify instance, the `onRequest` authorization of the module's routes (before any body
 * byte is read; docs/security.md) and the request gate for the module's routes.
 */
class LlamadRequestGateInstaller implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly config: DaemonConfig,
    private readonly mount: LlamadMount,
    private readonly appConfig: ApplicationConfig,
    private readonly authorizer: RequestAuthorizer,
    private readonly policies: TenantPolicySource,
    private readonly limiter: TenantLimiter,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter || this.mount.surfaces.length === 0) return; // an application context without HTTP
    if (adapter.getType() !== 'fastify') {
      throw new Error(
        `LlamadModule needs Nest's Fastify adapter (@nestjs/platform-fastify), not "${adapter.getType()}": its ` +
          'routes stream through Fastify replies',
      );
    }
    const fastify = adapter.getInstance<FastifyInstance>();
    const global = normalizePrefix(this.appConfig.getGlobalPrefix());
    if (this.mount.ui) installWebUi(fastify, { path: `${global}${this.mount.prefix}${WEB_UI_PATH}` });
    // The gate first (403 before 401), then authorization; both before the body is read.
    if (this.mount.requestGate) this.installGate(fastify);
    installRequestAuthorization(fastify, {
      authorizer: this.authorizer,
      policies: this.policies,
      applies: (request) => routeMarks(request).llamadRoute === true,
      render: renderWithRouteFilter(this.adapterHost),
      // Tenant rate limits of the metered routes (requests per minute, concurrency), before the body is read.
      admit: (request, reply) => admitRequest(this.limiter, request, reply),
    });
  }

  private installGate(fastify: FastifyInstance): void {
    const prefix = this.mount.prefix;
    // The host's global prefix (app.setGlobalPrefix, set before init) comes in front of the module's.
    const global = normalizePrefix(this.appConfig.getGlobalPrefix());
    const ui = `${global}${prefix}${WEB_UI_PATH}`;
    const underUi = (path: string): boolean => this.mount.ui && (path === ui || path.startsWith(`${ui}/`));
    const underModulePaths = (path: string): boolean => {
      if (global === '') return isModulePath(path, prefix);
      if (path !== global && !path.startsWith(`${global}/`)) return false;
      return isModulePath(path.slice(global.length) || '/', prefix);
    };
    installRequestGate(fastify, {
      origins: this.config.origins,
      // A routed request: the module's routes only (a host route under /api or /v1 is the host's). Unrouted ones
      // (preflights, 404s): by path.
      applies: (path, request) =>
        request.routeOptions.url !== undefined && request.method !== 'OPTIONS'
          ? routeMarks(request).llamadRoute === true || underUi(path)
          : underModulePaths(path),
    });
    // A request under the module's paths that matches no route: the host's not-found handler answers it before its
    // body is read (a 50 MB PUT /api/chat is not read to learn it is a 404).
    installUnroutedAnswer(fastify, { applies: (path) => underModulePaths(path) });
  }
}

/** Registers the REQUEST_HOOKS in the application's GenerationHooksRegistry while the module runs. */
class LlamadRequestHooksRegistrar implements OnModuleInit, OnModuleDestroy {
  private unregister: (() => void)[] = [];

  constructor(
    private readonly registry: GenerationHooksRegistry,
    private readonly hooks: RequestHooksValue,
  ) {}

  onModuleInit(): void {
    const list = Array.isArray(this.hooks) ? this.hooks : this.hooks ? [this.hooks] : [];
    this.unregister = list.map((hooks) => this.registry.register(hooks));
  }

  onModuleDestroy(): void {
    for (const remove of this.unregister) remove();
    this.unregister = [];
  }
}

/** Tokens the core always exports. */
const CORE_TOKENS: unknown[] = [
  DaemonConfig,
  NATIVE_BINDING,
  AUTHORIZER,
  TENANT_POLICY_SOURCE,
  RUNNER_FACTORY,
  MEMORY_PROBE,
  TEMPLATE_RENDERER,
  REQUEST_HOOKS,
  MODEL_EVENTS,
  RESPONSES_STORE,
  USAGE_STORE,
  REDIS_CLIENT,
  RATE_LIMIT_STORE,
  TenantLimiter,
  TOKEN_BUDGET,
];

/** Tokens whose override belongs to the models module (it provides them itself). */
const MODELS_TOKENS: unknown[] = [MODEL_STORE];

function tokenOf(provider: Provider): unknown {
  return typeof provider === 'function' ? provider : provider.provide;
}

const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<LlamadModuleOptions>({
  moduleName: 'Llamad',
})
  .setClassMethodName('forRoot')
  .setExtras<LlamadModuleExtras>(EXTRAS_DEFAULTS, (definition, extras) => assemble(definition, extras))
  .build();

/** Injection token of the LlamadModuleOptions (after a `forRootAsync` factory resolved). */
export const LLAMAD_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;

/**
 * The service as a NestJS module (ARCHITECTURE.md §13):
 *
 * ```ts
 * @Module({ imports: [LlamadModule.forRoot({ prefix: '/llm', config: { modelsDir: '/srv/models' } })] })
 * export class AppModule {}
 * ```
 *
 * Mounts the chosen surfaces' controllers (under `prefix`), exports LlamadService (the programmatic API), and
 * provides the extension tokens with their defaults (replace them with `providers`). Nothing is global: the
 * exception filters, validation pipe and authorization guard are bound to the module's own controllers, and the
 * request gate judges the module's paths only. The daemon (AppModule) is this module plus its global parts.
 * Importing it starts nothing: the native addon is loaded when the first model loads.
 */
export class LlamadModule extends ConfigurableModuleClass {}

/** Builds the module graph: one core shared by every internal module, no global provider. */
function assemble(definition: DynamicModule, extras: LlamadModuleExtras): DynamicModule {
  const surfaces = [...new Set(extras.surfaces ?? ALL_SURFACES)];
  for (const surface of surfaces) {
    if (!(surface in SURFACE_CONTROLLERS)) throw new Error(`LlamadModule: unknown surface ${JSON.stringify(surface)}`);
  }
  const prefix = normalizePrefix(extras.prefix);
  if (extras.ui === true && !surfaces.includes('native')) {
    throw new Error('LlamadModule: the web UI (`ui: true`) needs the `native` surface, whose routes it calls');
  }
  const mount: LlamadMount = { prefix, surfaces, requestGate: extras.requestGate !== false, ui: extras.ui === true };
  const overrides = extras.providers ?? [];
  const modelOverrides = overrides.filter((p) => MODELS_TOKENS.includes(tokenOf(p)));
  const coreOverrides = overrides.filter((p) => !MODELS_TOKENS.includes(tokenOf(p)));
  const hostImports = [...(definition.imports ?? []), ...(extras.imports ?? [])];

  const core: DynamicModule = {
    module: LlamadCoreModule,
    imports: hostImports,
    providers: [
      ...(definition.providers ?? []),
      {
        provide: DaemonConfig,
        inject: [MODULE_OPTIONS_TOKEN],
        useFactory: (options: LlamadModuleOptions): DaemonConfig =>
          options.config instanceof DaemonConfig ? options.config : Object.assign(new DaemonConfig(), options.config),
      },
      // A loader: the addon is `require`d when the first model loads, never at import or bootstrap.
      { provide: NATIVE_BINDING, useValue: loadBinding },
      { provide: AUTHORIZER, useClass: ApiKeyAuthorizer },
      { provide: TENANT_POLICY_SOURCE, useClass: PrincipalPolicySource },
      {
        // Each model in its own runner process unless config.runner is 'inprocess' (LLAMAD_RUNNER) or the
        // NATIVE_BINDING is not the compiled addon (DefaultRunnerFactory).
        provide: RUNNER_FACTORY,
        inject: [DaemonConfig, NATIVE_BINDING],
        useFactory: (config: DaemonConfig, loader: NativeBindingLoader): RunnerFactory =>
          new DefaultRunnerFactory(config.runner, loader, {
            loadTimeoutMs: config.loadTimeoutMs,
            heartbeatTimeoutMs: config.runnerHeartbeatTimeoutMs,
            faults: config.runnerFaults,
          }),
      },
      { provide: MEMORY_PROBE, useClass: SystemMemoryProbe },
      { provide: TEMPLATE_RENDERER, useClass: GoTemplateRenderer },
      { provide: REQUEST_HOOKS, useValue: [] },
      // Model lifecycle events for GET /api/events (load, unload, pull, push, create), in this process's memory.
      { provide: MODEL_EVENTS, useFactory: () => new InMemoryModelEvents() },
      {
        // In this process's memory, or with LLAMAD_REDIS_URL in Redis on the same connection as the tenant limits, so
        // that replicas continue each other's responses (docs/deploy.md "Several replicas").
        provide: RESPONSES_STORE,
        inject: [DaemonConfig, REDIS_CLIENT],
        useFactory: (c: DaemonConfig, redis: Redis | null) => {
          const limits = { maxResponses: c.responsesMax, maxBytes: c.responsesMaxBytes, ttlMs: c.responsesTtlMs };
          return redis ? new RedisResponsesStore(redis, limits) : new InMemoryResponsesStore(limits);
        },
      },
      // Usage per caller for GET /api/usage: in this process's memory (per replica), bounded (usage.store.ts).
      { provide: USAGE_STORE, useFactory: () => new InMemoryUsageStore() },
      // Tenant limits (docs/security.md "Rate limits and quotas"): counted in memory, or in Redis with
      // LLAMAD_REDIS_URL (one lazily connected client, closed with the module).
      {
        provide: REDIS_CLIENT,
        inject: [DaemonConfig],
        useFactory: async (c: DaemonConfig) => (c.redisUrl !== '' ? await createRedisClient(c.redisUrl) : null),
      },
      RedisClientCloser,
      {
        provide: RATE_LIMIT_STORE,
        inject: [REDIS_CLIENT],
        useFactory: (redis: Redis | null) => new FlexibleRateLimitStore(redis ? { redis } : {}),
      },
      TenantLimiter,
      { provide: TOKEN_BUDGET, inject: [TenantLimiter], useFactory: (l: TenantLimiter) => new RequestTokenBudget(l) },
      { provide: LLAMAD_MOUNT, useValue: mount },
      // Overrides come last: a later provider of the same token replaces the default.
      ...coreOverrides,
    ],
    exports: [
      ...CORE_TOKENS,
      LLAMAD_MOUNT,
      ...coreOverrides.map(tokenOf).filter((token) => !CORE_TOKENS.includes(token)),
      ...hostImports,
    ] as NonNullable<DynamicModule['exports']>,
  };
  const models: DynamicModule = { module: ModelsModule, imports: [core], providers: modelOverrides };
  // GenerationHooksModule is static: one registry per application, shared with the daemon's metrics.
  const inference: DynamicModule = { module: InferenceModule, imports: [core, models, GenerationHooksModule] };
  const registry: DynamicModule = { module: RegistryModule, imports: [core, models] };
  const facade: DynamicModule = {
    module: LlamadFacadeModule,
    imports: [models, inference, registry],
    providers: [LlamadService],
    exports: [LlamadService],
  };
  const controllers = surfaces.flatMap((surface) => SURFACE_CONTROLLERS[surface]);
  const compat: DynamicModule = { module: CompatModule, imports: [core, models, inference] };
  // Metrics, probes, graceful shutdown (src/observability); its routes are mounted with the others.
  const observability: DynamicModule = { module: OperationsModule, imports: [core, inference] };
  const http: DynamicModule = {
    module: LlamadHttpModule,
    imports: [
      core,
      CommonModule,
      models,
      inference,
      registry,
      facade,
      ...(controllers.length > 0 ? [compat, observability] : []),
    ],
    controllers: controllers.length > 0 ? [...controllers, ...OPERATIONS_CONTROLLERS] : [],
  };
  return {
    module: definition.module,
    imports: [
      core,
      GenerationHooksModule,
      models,
      inference,
      observability,
      facade,
      http,
      ...(prefix !== '' && controllers.length > 0
        ? [RouterModule.register([{ path: prefix, module: LlamadHttpModule }])]
        : []),
    ],
    providers: [
      {
        provide: LlamadRequestGateInstaller,
        inject: [
          HttpAdapterHost,
          DaemonConfig,
          LLAMAD_MOUNT,
          ApplicationConfig,
          AUTHORIZER,
          TENANT_POLICY_SOURCE,
          TenantLimiter,
        ],
        useFactory: (
          host: HttpAdapterHost,
          config: DaemonConfig,
          m: LlamadMount,
          app: ApplicationConfig,
          authorizer: RequestAuthorizer,
          policies: TenantPolicySource,
          limiter: TenantLimiter,
        ) => new LlamadRequestGateInstaller(host, config, m, app, authorizer, policies, limiter),
      },
      {
        provide: LlamadRequestHooksRegistrar,
        inject: [GenerationHooksRegistry, REQUEST_HOOKS],
        useFactory: (registry: GenerationHooksRegistry, hooks: RequestHooksValue) =>
          new LlamadRequestHooksRegistrar(registry, hooks),
      },
    ],
    exports: [core, facade, models, inference, observability],
  };
}
