/**
 * The library entry of the `llamad` package (`import { LlamadModule, LlamadService } from 'llamad'`): the NestJS
 * module, the programmatic API, the extension tokens with their interfaces and default implementations, and the
 * request/response types of the native API. Importing it starts nothing and does not load the native addon (that
 * happens when the first model loads). The daemon is the package's `llamad` bin (dist/src/main.js). See
 * docs/library.md.
 */

// The module and its options.
export {
  ALL_SURFACES,
  LLAMAD_MODULE_OPTIONS,
  LlamadModule,
  type LlamadModuleExtras,
  type LlamadModuleOptions,
  type LlamadSurface,
} from './llamad.module';

// The programmatic API: Ollama's dialect as a service (the native controllers call it too; docs/library.md).
export * from './api/ollama/llamad-stream';
export * from './api/ollama/llamad.service';

// Settings.
export { DaemonConfig, loadConfig, type ListenAddress, type RunnerMode } from './config/daemon-config';

// Extension tokens, their interfaces and default implementations.
export {
  ANONYMOUS,
  ApiKeyAuthorizer,
  AUTHORIZER,
  type AuthorizationRequest,
  type Principal,
  type RequestAuthorizer,
} from './security/authorizer';
export { principalOf } from './security/request-authorization';
export { PrincipalPolicySource, TENANT_POLICY_SOURCE, type TenantPolicySource } from './security/tenant-policy-source';
export { type TenantLimits, type TenantPolicy, type TenantRole, roleOf } from './security/tenant-policy';
export { AdminOnly, requireAdmin } from './security/admin-only';
export {
  CONCURRENCY_RETRY_MS,
  createRedisClient,
  FlexibleRateLimitStore,
  RATE_LIMIT_STORE,
  REDIS_CLIENT,
  RequestTokenBudget,
  TenantLimiter,
  TOKEN_BUDGET,
  WINDOW_SECONDS,
  type Admission,
  type FlexibleRateLimitStoreOptions,
  type LimitWindowName,
  type RateLimitStore,
  type TokenBudget,
  type TokenMeter,
  type TokenReservation,
  type WindowCount,
} from './security/limits';
export { Metered } from './security/route-marks';
export {
  DEFAULT_RESPONSES_STORE_OPTIONS,
  InMemoryResponsesStore,
  RESPONSES_STORE,
  type ResponsesStore,
  type ResponsesStoreOptions,
  type StoredResponse,
} from './api/openai/responses/responses.store';
export {
  DEFAULT_REDIS_RESPONSES_PREFIX,
  RedisResponsesStore,
  type RedisResponsesStoreOptions,
} from './api/openai/responses/redis-responses.store';
export {
  MODEL_STORE,
  MissingLayerError,
  type BlobPin,
  type CommittedManifest,
  type CopiedManifest,
  type ModelStore,
  type StoredBlob,
  type StoredManifest,
  type SweepResult,
} from './models/model-store';
export { ModelStoreRepository } from './models/model-store.repository';
export type { Manifest, ManifestLayer } from './models/manifest';
export { ModelName } from './models/model-name';
export {
  DefaultRunnerFactory,
  LlamaRunnerFactory,
  ProcessRunner,
  ProcessRunnerFactory,
  RUNNER_FACTORY,
  type RunnerDeath,
  type Runner,
  type RunnerEvent,
  type RunnerFactory,
  type RunnerModelInfo,
  type RunnerRequest,
  type RunnerSpec,
} from './runner';
export {
  GoTemplateRenderer,
  TEMPLATE_RENDERER,
  type GoTemplateHandle,
  type GoTemplatesApi,
  type GoTemplateValues,
  type TemplateRenderer,
} from './generation';
export { MEMORY_PROBE, SystemMemoryProbe, type MemoryProbe } from './scheduler';
export {
  DEFAULT_USAGE_STORE_OPTIONS,
  InMemoryUsageStore,
  USAGE_STORE,
  UsageService,
  type InMemoryUsageStoreOptions,
  type UsageRecord,
  type UsageReport,
  type UsageResponseWire,
  type UsageRow,
  type UsageRowWire,
  type UsageStore,
} from './operations';
export { REQUEST_HOOKS, type RequestHooksValue } from './observability';
export {
  InMemoryModelEvents,
  MODEL_EVENTS,
  type ModelEvent,
  type ModelEventInput,
  type ModelEvents,
  type ModelEventType,
  type UnloadReason,
} from './observability';
export type { GenerationEndInfo, GenerationInfo, GenerationKind, RequestHooks } from './observability';
export { NATIVE_BINDING, type NativeBindingLoader } from './native/native.tokens';
export { loadBinding, findAddon, findAddonPath, loadedAddon } from './native/load-binding';
export type { AddonBackend, AddonCandidate, AddonOrigin } from './native/addon-candidates';

// Errors (every error the API raises is a DaemonError with an HTTP status).
export * from './common/errors';

// The native API's request and response shapes.
export {
  ChatRequestDto,
  CopyRequestDto,
  CreateRequestDto,
  DeleteRequestDto,
  EmbeddingsRequestDto,
  EmbedRequestDto,
  GenerateRequestDto,
  MessageDto,
  RegistryRequestDto,
  ShowRequestDto,
  type ChatMessageWire,
  type ChatResponseWire,
  type EmbeddingsResponseWire,
  type EmbedResponseWire,
  type GenerateResponseWire,
  type ListModelWire,
  type ListResponseWire,
  type LogprobWire,
  type MetricsWire,
  type ProgressWire,
  type ShowResponseWire,
  type ToolCallWire,
} from './api/ollama';
export type { RegistryProgressWire } from './registry/registry.types';

// For a host that dedicates its Fastify instance to the service: the daemon's own HTTP conventions.
export { installJsonBodyParser } from './common/http/json-body.parser';
export { installRequestGate } from './security/request-gate';
export { BODY_LIMIT_BYTES, createApp } from './app.factory';
export type { AppOptions } from './app.module';

// OpenAPI for hosts: llamad's own document (and `<prefix>/openapi.json`, `<prefix>/docs`), or the host's completed.
export { buildOpenApiDocument, mergeLlamadOpenApi, setupOpenApi } from './openapi/openapi';

// Health and shutdown for hosts (docs/library.md "Health and shutdown"); the Terminus indicator is `llamad/terminus`.
export { GracefulShutdownService, type DrainResult } from './operations/shutdown/graceful-shutdown.service';
export { ReadinessService, type Readiness } from './operations/health/readiness.service';
