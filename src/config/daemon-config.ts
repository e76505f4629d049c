import { homedir } from 'node:os';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { splitRpcServers } from '../common/options/rpc-servers';
import { hostMemoryBytes } from './host-memory';
import { DEFAULT_KEEP_ALIVE_MS, KeepAliveMs, parseGoDuration, parseKeepAliveEnv } from '../common/time';
import { CacheScopeMode, parseCacheScopeEnv } from './cache-scope-env';
import { parseRedisUrlEnv } from './redis-url-env';
import { DEFAULT_MAX_AUDIO_SECONDS, parseMaxAudioSecondsEnv } from './audio-env';
import { MetricsAddress, parseMetricsAddrEnv } from './metrics-addr-env';
import { parseTracingEnv, tracingDisabled, TracingSettings } from './otel-env';
import {
  DEFAULT_LOAD_TIMEOUT_MS,
  DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS,
  parseHeartbeatTimeoutEnv,
  parseLoadTimeoutEnv,
  parseRunnerFaults,
  RunnerFault,
} from './watchdog-env';

/** The address the daemon listens on, parsed from OLLAMA_HOST. */
export interface ListenAddress {
  scheme: 'http' | 'https';
  /** Host name or IP to bind; '' means every interface (Go's `:11434`). IPv6 without brackets. */
  host: string;
  port: number;
}

/** Log levels of LLAMAD_LOG_LEVEL (pino's, most verbose first), plus `silent`. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Values of LLAMAD_RUNNER (see DaemonConfig.runner). */
export type RunnerMode = 'process' | 'inprocess';

/** OLLAMA_FLASH_ATTENTION as llama.cpp's flash_attn_type: unset → `auto`, a true value → `on`, false → `off`. */
export type FlashAttentionMode = 'auto' | 'on' | 'off';

/** KV cache element types of OLLAMA_KV_CACHE_TYPE (Ollama's supported set; applied to both K and V). */
export const KV_CACHE_TYPES = ['f16', 'q8_0', 'q4_0'] as const;

/** One of {@link KV_CACHE_TYPES}. */
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

/** Slots per loaded model when OLLAMA_NUM_PARALLEL is unset (llama-server's `-np -1` auto mode: 4). */
export const AUTO_PARALLEL_SLOTS = 4;

/** LLAMAD_MAX_LORAS when unset or invalid: adapters resident at once per base model. */
export const DEFAULT_MAX_LORAS = 4;

/** The largest LLAMAD_MAX_LORAS accepted. */
export const MAX_LORAS_LIMIT = 64;

/** How a runner's slots use its KV cache, from OLLAMA_NUM_PARALLEL (see DaemonConfig.numParallel). */
export interface ParallelPlan {
  /** Slots (sequences decoded together). */
  numParallel: number;
  /** true: the slots share one cache of num_ctx cells; false: num_ctx cells per slot. */
  kvUnified: boolean;
}

/**
 * The slots of a runner: OLLAMA_NUM_PARALLEL=N → N slots of num_ctx cells each (Ollama's meaning); unset (0) →
 * {@link AUTO_PARALLEL_SLOTS} slots sharing one num_ctx cache (llama-server's auto mode, `-np -1` with kv_unified).
 */
export function parallelPlan(numParallel: number): ParallelPlan {
  return numParallel > 0 ? { numParallel, kvUnified: false } : { numParallel: AUTO_PARALLEL_SLOTS, kvUnified: true };
}

/**
 * Cap of the daemon-wide host-RAM prompt cache budget when LLAMAD_CACHE_RAM is unset, MiB: llama-server's
 * `--cache-ram` default (what one model got before the budget was shared). Also the budget of a DaemonConfig built by
 * hand (not by loadConfig).
 */
export const DEFAULT_CACHE_RAM_MIB = 8192;

/**
 * Share of the daemon's memory (hostMemoryBytes: physical memory, or the cgroup v2 limit when lower) that the host-RAM
 * prompt cache budget takes when LLAMAD_CACHE_RAM is unset: a quarter, so that three quarters stay for the weights,
 * KV caches and compute buffers the scheduler admits loads against (docs/native.md "Host-RAM prompt cache").
 */
export const CACHE_RAM_MEMORY_SHARE = 0.25;

/**
 * The default host-RAM prompt cache budget of the whole daemon, MiB: {@link CACHE_RAM_MEMORY_SHARE} of `memoryBytes`
 * (the memory the daemon may use, bytes), at most {@link DEFAULT_CACHE_RAM_MIB}; rounded down to whole MiB.
 */
export function defaultCacheRamMiB(memoryBytes: number): number {
  const share = Math.floor((CACHE_RAM_MEMORY_SHARE * Math.max(0, memoryBytes)) / 2 ** 20);
  return Math.min(DEFAULT_CACHE_RAM_MIB, share);
}

/** LLAMAD_SHUTDOWN_TIMEOUT when unset, ms. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

/**
 * Every setting the daemon reads from its environment. Built once by `loadConfig()` — src/config/ is the only place
 * that reads environment variables (ARCHITECTURE.md §4, after Ollama's envconfig) — and injected as a provider.
 */
export class DaemonConfig {
  /** OLLAMA_HOST: bind address, default 127.0.0.1:11434. */
  listen: ListenAddress = { scheme: 'http', host: '127.0.0.1', port: 11434 };
  /** OLLAMA_MODELS: root of the model store (manifests/ and blobs/), default ~/.ollama/models. */
  modelsDir: string = join(homedir(), '.ollama', 'models');
  /** OLLAMA_KEEP_ALIVE: default keep-alive of a new load, ms (Infinity = forever). */
  keepAliveMs: KeepAliveMs = DEFAULT_KEEP_ALIVE_MS;
  /**
   * OLLAMA_NUM_PARALLEL: slots per loaded model, each with its own num_ctx of KV cache (Ollama's meaning); 0 (unset,
   * or 0) = automatic: {@link AUTO_PARALLEL_SLOTS} slots sharing one cache of num_ctx cells, so one client still gets
   * its whole num_ctx and concurrent clients wait for cells when it is full (docs/native.md "Parallel slots").
   */
  numParallel = 0;
  /** OLLAMA_CONTEXT_LENGTH: default num_ctx in tokens; 0 = unset (the daemon then uses 4096). */
  contextLength = 0;
  /** OLLAMA_MAX_LOADED_MODELS: cap on resident models; 0 = automatic (3 on CPU), enforced by SchedulerService. */
  maxLoadedModels = 0;
  /** OLLAMA_MAX_QUEUE: pending-load queue size before 503. */
  maxQueue = 512;
  /**
   * LLAMAD_MAX_LORAS: LoRA adapters resident at once per loaded base model (RunnerSpec.maxLoras), an integer
   * 1..{@link MAX_LORAS_LIMIT}; unset or invalid = {@link DEFAULT_MAX_LORAS}. Requests for more distinct adapters wait
   * until one is idle (the least recently used idle one is unloaded). Beyond Ollama (vLLM's `max_loras`).
   */
  maxLoras = DEFAULT_MAX_LORAS;
  /**
   * OLLAMA_ORIGINS: extra allowed browser origins (comma separated, `*` wildcards), on top of the defaults of
   * src/security/origin-policy.ts (reference/ollama-api.md §1.2). Enforced by the request gate on every route.
   */
  origins: string[] = [];
  /** LLAMAD_API_KEYS: API keys a request must present (comma separated); empty = no key check (beyond Ollama). */
  apiKeys: string[] = [];
  /**
   * LLAMAD_API_KEYS_FILE: absolute path of a file with one API key per line ('' = none). Re-read when it changes or on
   * SIGHUP. When set, keys are required even if the file holds none (fail closed).
   */
  apiKeysFile = '';
  /**
   * LLAMAD_RESPONSES_MAX: most `/v1/responses` objects kept in memory for `previous_response_id` and
   * `GET /v1/responses/{id}` (beyond Ollama); 0 keeps none. Default 1000.
   */
  responsesMax = 1000;
  /** LLAMAD_RESPONSES_TTL: how long a stored response is kept, ms (a Go duration such as `30m`). Default 1 h. */
  responsesTtlMs = 60 * 60 * 1000;
  /**
   * LLAMAD_REDIS_URL: `redis://` or `rediss://` URL of the Redis/Valkey server where tenant rate limits and quotas are
   * counted and `/v1/responses` objects are stored, so that replicas share one budget and continue each other's
   * conversations ('' = in memory, per process; docs/security.md "Rate limits and quotas", docs/deploy.md "Several
   * replicas"). Beyond Ollama.
   */
  redisUrl = '';
  /** LLAMAD_MAX_AUDIO_SECONDS: the longest audio clip a request may send, seconds; 0 = no bound (audio-env.ts). */
  maxAudioSeconds = DEFAULT_MAX_AUDIO_SECONDS;
  /**
   * LLAMAD_METRICS_ADDR: `host:port` of a second listener serving GET /metrics only, without API keys, for in-cluster
   * scrapers (the inference gateway's endpoint picker); undefined = none. Beyond Ollama.
   */
  metricsAddr: MetricsAddress | undefined = undefined;
  /**
   * LLAMAD_EVENT_LOOP_WINDOW: how far back the quantiles of `llamad_event_loop_delay_seconds` reach, ms (a duration:
   * `60s`, `1m`); they cover between half of it and all of it (src/operations/metrics/event-loop-delay.ts).
   */
  eventLoopWindowMs = 60_000;
  /**
   * LLAMAD_RESPONSES_MAX_BYTES: most bytes (JSON size of the stored objects and conversations, estimated) the
   * `/v1/responses` store holds, all principals together; the least recently used go first. Default 256 MiB.
   */
  responsesMaxBytes = 256 * 1024 * 1024;
  /**
   * LLAMAD_MANAGEMENT_BODY_LIMIT: largest JSON body of the management routes (create, pull, push, copy, delete),
   * bytes; 413 beyond it (other routes: 100 MiB; blob uploads stream). Default 1 MiB.
   */
  managementBodyLimit = 1024 * 1024;
  /**
   * LLAMAD_ALLOW_SERVER_PATHS=1: with API keys set, still let a local requester name server files in a Modelfile
   * (`FROM /path`, `ADAPTER /path`). Without keys a local requester (loopback, no `Origin`) always may. Default off.
   */
  allowServerPaths = false;
  /** OLLAMA_DEBUG: 0 = info, 1 = debug, 2 = trace. */
  debugLevel = 0;
  /**
   * LLAMAD_THREADS: threads per llama context; 0 = automatic: the physical cores (not hyper-threads), split between
   * the models decoding at the same time (src/scheduler/thread-split.ts).
   */
  threads = 0;
  /**
   * LLAMAD_RPC_SERVERS: llama.cpp RPC workers (`host:port,host:port`, e.g. `llamad rpc-worker` on other machines) that
   * hold the layers of every model whose Modelfile has no `PARAMETER rpc` (beyond Ollama; docs/native.md "RPC").
   * Entries that are not `host:port` are dropped. Empty = none.
   */
  rpcServers: string[] = [];
  /**
   * LLAMAD_LOG_LEVEL: the log level (beyond Ollama); when unset, OLLAMA_DEBUG=1 means `debug`, 2 or more `trace`,
   * else `info`. Logs are JSON lines (pino), pretty-printed when stdout is a terminal.
   */
  logLevel: LogLevelName = 'info';
  /**
   * LLAMAD_SHUTDOWN_TIMEOUT: on SIGTERM/SIGINT, how long requests in flight (streams included) may run before they
   * are ended, ms (a Go duration such as `45s`, or bare seconds). Default 30 s (beyond Ollama).
   */
  shutdownTimeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS;
  /**
   * LLAMAD_DRAIN_DELAY: on SIGTERM/SIGINT, how long the daemon keeps accepting requests while `GET /ready` already
   * answers 503 `shutting down`, ms (a Go duration such as `2s`, or bare seconds), so that a load balancer that
   * health-checks `/ready` (haproxy, docs/deploy.md "Several replicas") takes the replica out before its listener
   * closes; LLAMAD_SHUTDOWN_TIMEOUT counts after it. Default 0 (Kubernetes removes a terminating pod's endpoints by
   * itself; deploy/k8s waits in a `preStop` hook). A second signal ends it. Beyond Ollama.
   */
  drainDelayMs = 0;
  /**
   * LLAMAD_RUNNER: where a loaded model runs (beyond Ollama). `process` (default): each model in its own runner
   * process (src/runner/process), so a model that aborts llama.cpp ends only its own requests; `inprocess`: in the
   * daemon's process (the addon loaded in-process; a crash there takes the daemon down). Library hosts set it through
   * LlamadModule's `config.runner`. A host that supplies its own NATIVE_BINDING always gets `inprocess` (an in-memory
   * binding cannot be carried into a child process).
   */
  runner: RunnerMode = 'process';
  /**
   * OLLAMA_FLASH_ATTENTION: flash attention of every context (reference/ollama-api.md §7.6, §13.1 `--flash-attn`).
   * Unset → `auto`: off for a generation context whose model runs on the CPU alone (binding.d.ts
   * NativeContextParams.flashAttn), else llama.cpp enables it where the device supports it; otherwise Ollama's bool
   * parsing: `1`, `true`, `t` … → `on`, `0`, `false`, `f` … → `off`, any other text → `on` (envconfig.Bool treats
   * unparsable as true).
   */
  flashAttention: FlashAttentionMode = 'auto';
  /**
   * OLLAMA_KV_CACHE_TYPE: KV cache element type requested for every model (K and V; §7.6, §13.1 `--cache-type-k/-v`),
   * lower-cased; unset or unknown → `f16` (an unknown value is reported by {@link kvCacheSettings}). A quantized type
   * applies only with flash attention `on`: see kvCacheSettings for what a load really uses.
   */
  kvCacheType: KvCacheType = 'f16';
  /** OLLAMA_KV_CACHE_TYPE as given (lower-cased, trimmed), for the warning about an unknown value; '' when unset. */
  kvCacheTypeRequested = '';
  /**
   * LLAMAD_CACHE_RAM: the host-RAM prompt cache budget of the whole daemon, MiB (beyond Ollama; llama-server's
   * `--cache-ram` is per server): when a slot's KV is dropped for another conversation, the sequence is kept in the
   * runner's memory (least recently used out first) and restored when a request's prompt extends it (docs/native.md
   * "Host-RAM prompt cache"). Each loaded runner reserves an equal share of it (the scheduler's RamCacheBudget:
   * budget / OLLAMA_MAX_LOADED_MODELS, 3 when unset), so the runners together never hold more. Unset (or not a whole
   * number): {@link defaultCacheRamMiB} of the daemon's memory, computed by loadConfig; 0 disables the cache.
   */
  cacheRamMiB = DEFAULT_CACHE_RAM_MIB;
  /**
   * LLAMAD_CACHE_SCOPE: `principal` or `global` (beyond Ollama; docs/security.md "Cache scope"); undefined = unset:
   * `principal` when API keys are configured, else `global` (read it through cache-scope-env.ts cacheScopeMode).
   * Any other value stops loadConfig with InvalidConfigError.
   */
  cacheScope?: CacheScopeMode;
  /**
   * OLLAMA_LOAD_TIMEOUT: how long a model load may go without progress before it fails with Ollama's 500 `timed out
   * waiting for llama runner to start - progress 0.00 - …` and its runner process is killed, ms (Go duration or
   * seconds; ≤ 0 = Infinity, no timeout). Default 5 min (reference/ollama-api.md §7.6, §13.2).
   */
  loadTimeoutMs = DEFAULT_LOAD_TIMEOUT_MS;
  /**
   * LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: a runner process with requests in flight whose engine makes no progress (no
   * decode step, event or result) for this long per step of up to 512 batch tokens is killed; its requests fail with
   * `llama runner process has terminated: …stopped responding…`, ms (Go duration or seconds; ≤ 0 = Infinity, off).
   * Default 5 min (beyond Ollama; docs/architecture.md "Watchdogs").
   */
  runnerHeartbeatTimeoutMs = DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS;
  /**
   * LLAMAD_TEST_RUNNER_FAULT: a test hook (`model=load-hang`, `model=stall`, comma separated): the runner process of
   * that model simulates the fault once (watchdog-env.ts RunnerFault). Empty in production.
   */
  runnerFaults: Record<string, RunnerFault> = {};
  /**
   * LLAMAD_UI: serve the built-in web UI at `/ui` (docs/ui.md); `0`/`false` turns it off (Go's ParseBool, as
   * {@link parseEnvBool}). Default on. Beyond Ollama. Library hosts choose with LlamadModule's `ui` option instead.
   */
  ui = true;
  /**
   * LLAMAD_DRAFT_FIXED: speculative decoding drafts `draft_num_predict` tokens (n-gram: as many as the match gives, up
   * to that) at every step, as llama-server does, instead of letting the engine's cost model decide per step whether
   * a draft pays (docs/native.md "Cost model"). For measurements and for hardware whose timings mislead the cost
   * model; it can make decoding slower than no speculation. Default false. Beyond Ollama.
   */
  draftFixed = false;
  /** The OTEL_* variables: whether the daemon exports traces, and how (otel-env.ts; docs/observability.md "Traces"). */
  tracing: TracingSettings = tracingDisabled();
  /** Whether logging is enabled at all (off in tests: every log line is dropped). Not an environment variable. */
  logging = true;
}

/** LLAMAD_LOG_LEVEL (case-insensitive) when valid, else what OLLAMA_DEBUG asks for (1 → debug, ≥ 2 → trace). */
function parseLogLevel(raw: string, debugLevel: number): LogLevelName {
  const wanted = raw.toLowerCase();
  const level = LOG_LEVELS.find((l) => l === wanted);
  if (level) return level;
  return debugLevel >= 2 ? 'trace' : debugLevel >= 1 ? 'debug' : 'info';
}

/** Ollama's envconfig.Var: whitespace and surrounding quotes trimmed. */
function envVar(env: NodeJS.ProcessEnv, key: string): string {
  return (env[key] ?? '').trim().replace(/^["']+|["']+$/g, '');
}

function envUint(env: NodeJS.ProcessEnv, key: string, fallback: number): number {
  const raw = envVar(env, key);
  if (raw === '' || !/^\d+$/.test(raw)) return fallback;
  return Number(raw);
}

/**
 * Parses OLLAMA_HOST like Ollama's envconfig.Host (reference/ollama-api.md §7.6): accepts `host`, `host:port`,
 * `:port`, `[v6]:port` and `scheme://host:port/path`; `http://` without a port means 80, `https://` 443, otherwise
 * 11434; an invalid port falls back to the default.
 */
export function parseListenAddress(raw: string): ListenAddress {
  let scheme: 'http' | 'https' = 'http';
  let defaultPort = 11434;
  let hostport = raw.trim();
  const sep = hostport.indexOf('://');
  if (sep >= 0) {
    const s = hostport.slice(0, sep).toLowerCase();
    hostport = hostport.slice(sep + 3);
    if (s === 'https') {
      scheme = 'https';
      defaultPort = 443;
    } else if (s === 'http') {
      defaultPort = 80;
    }
  } else if (hostport === 'ollama.com') {
    return { scheme: 'https', host: 'ollama.com', port: 443 };
  }
  const slash = hostport.indexOf('/');
  if (slash >= 0) hostport = hostport.slice(0, slash);

  let host: string;
  let portText: string;
  const bracketed = /^\[([^\]]*)\]:(.*)$/.exec(hostport);
  const lastColon = hostport.lastIndexOf(':');
  if (bracketed) {
    host = bracketed[1];
    portText = bracketed[2];
  } else if (lastColon >= 0 && hostport.indexOf(':') === lastColon) {
    host = hostport.slice(0, lastColon);
    portText = hostport.slice(lastColon + 1);
  } else {
    // No port (or a bare IPv6 address): Go's SplitHostPort fails and the whole text is the host.
    const bare = hostport.replace(/^\[|\]$/g, '');
    host = isIP(bare) ? bare : hostport || '127.0.0.1';
    portText = String(defaultPort);
  }
  let port = /^\d+$/.test(portText) ? Number(portText) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) port = defaultPort;
  return { scheme, host, port };
}

/** A path variable, `~` expanded and made absolute; undefined when unset. */
function envPath(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const raw = envVar(env, key);
  return raw === '' ? undefined : resolve(raw.replace(/^~(?=$|\/)/, homedir()));
}

/** A comma-separated list: entries trimmed, empty ones dropped. */
function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** A positive Go duration (`90s`, `1h30m`) in ms; a bare number is seconds; `fallback` when unset or invalid. */
function envDurationMs(env: NodeJS.ProcessEnv, key: string, fallback: number): number {
  const raw = envVar(env, key);
  if (raw === '') return fallback;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  try {
    const ms = parseGoDuration(raw) / 1e6;
    return ms > 0 ? ms : fallback;
  } catch {
    return fallback;
  }
}

/** Go's strconv.ParseBool plus integers, as Ollama's OLLAMA_DEBUG: true/1 → 1, 2 → 2, false/0/'' → 0. */
function parseDebugLevel(raw: string): number {
  if (raw === '') return 0;
  if (/^\d+$/.test(raw)) return Number(raw);
  return ['true', 't', 'TRUE', 'True', 'T'].includes(raw) ? 1 : 0;
}

/**
 * Go's strconv.ParseBool as Ollama's envconfig.Bool uses it: `1 t T TRUE true True` → true, `0 f F FALSE false False`
 * → false; any other non-empty text → true (envconfig returns true when ParseBool fails); '' → undefined (unset).
 */
export function parseEnvBool(raw: string): boolean | undefined {
  if (raw === '') return undefined;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return true;
}

/** The KV cache a load uses, and why it is not what was asked for (a warning to log), from {@link kvCacheSettings}. */
export interface KvCacheSettings {
  flashAttention: FlashAttentionMode;
  kvCacheType: KvCacheType;
  /** Set when OLLAMA_KV_CACHE_TYPE was not applied as given (unknown type, or quantized without flash attention). */
  warning?: string;
}

/**
 * Ollama's rule for the KV cache type (llm/server.go; reference/ollama-api.md §7.6, §13.1): an unknown type is
 * ignored with a warning (`f16`); a quantized type (`q8_0`, `q4_0`) needs flash attention — llama.cpp cannot
 * quantize the V cache without it — so unless OLLAMA_FLASH_ATTENTION is on (not `auto`, not `off`) the cache stays
 * `f16`, with a warning. Pure.
 */
export function kvCacheSettings(
  config: Pick<DaemonConfig, 'flashAttention' | 'kvCacheType' | 'kvCacheTypeRequested'>,
): KvCacheSettings {
  const flashAttention = config.flashAttention;
  const requested = config.kvCacheTypeRequested;
  if (requested !== '' && !(KV_CACHE_TYPES as readonly string[]).includes(requested)) {
    return {
      flashAttention,
      kvCacheType: 'f16',
      warning: `unsupported OLLAMA_KV_CACHE_TYPE "${requested}": using f16 (supported: ${KV_CACHE_TYPES.join(', ')})`,
    };
  }
  if (config.kvCacheType !== 'f16' && flashAttention !== 'on') {
    return {
      flashAttention,
      kvCacheType: 'f16',
      warning: `OLLAMA_FLASH_ATTENTION must be enabled to use a quantized OLLAMA_KV_CACHE_TYPE (${config.kvCacheType}): using f16`,
    };
  }
  return { flashAttention, kvCacheType: config.kvCacheType };
}

/**
 * Builds the daemon's configuration from an environment (default: process.env). Unknown or invalid values fall back
 * to Ollama's defaults, as envconfig does, except where a wrong guess would weaken isolation between clients.
 * @throws InvalidConfigError for an LLAMAD_CACHE_SCOPE other than `principal` or `global`, or an LLAMAD_REDIS_URL that
 *   is not a redis:// or rediss:// URL, or an LLAMAD_METRICS_ADDR that is not host:port, or an
 *   LLAMAD_MAX_AUDIO_SECONDS that is not a number of seconds (a bound an operator set must not be guessed).
 * @param memoryBytes the memory the daemon may use, bytes, for the default LLAMAD_CACHE_RAM budget (read only when
 *   it is unset); default hostMemoryBytes() (physical memory, or the cgroup v2 limit when lower). Tests pass a value.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  memoryBytes: () => number = () => hostMemoryBytes(),
): DaemonConfig {
  const config = new DaemonConfig();
  const host = envVar(env, 'OLLAMA_HOST');
  if (host !== '') config.listen = parseListenAddress(host);
  config.modelsDir = envPath(env, 'OLLAMA_MODELS') ?? config.modelsDir;
  config.keepAliveMs = parseKeepAliveEnv(envVar(env, 'OLLAMA_KEEP_ALIVE'));
  config.numParallel = envUint(env, 'OLLAMA_NUM_PARALLEL', 0);
  config.contextLength = envUint(env, 'OLLAMA_CONTEXT_LENGTH', 0);
  config.maxLoadedModels = envUint(env, 'OLLAMA_MAX_LOADED_MODELS', 0);
  config.maxQueue = envUint(env, 'OLLAMA_MAX_QUEUE', 512);
  const maxLoras = envUint(env, 'LLAMAD_MAX_LORAS', DEFAULT_MAX_LORAS);
  config.maxLoras = maxLoras >= 1 && maxLoras <= MAX_LORAS_LIMIT ? maxLoras : DEFAULT_MAX_LORAS;
  config.origins = splitList(envVar(env, 'OLLAMA_ORIGINS'));
  config.apiKeys = splitList(envVar(env, 'LLAMAD_API_KEYS'));
  const runner = envVar(env, 'LLAMAD_RUNNER').toLowerCase();
  if (runner === 'inprocess' || runner === 'in-process') config.runner = 'inprocess';
  config.apiKeysFile = envPath(env, 'LLAMAD_API_KEYS_FILE') ?? '';
  config.debugLevel = parseDebugLevel(envVar(env, 'OLLAMA_DEBUG'));
  config.threads = envUint(env, 'LLAMAD_THREADS', 0);
  config.rpcServers = splitRpcServers([envVar(env, 'LLAMAD_RPC_SERVERS')]).servers;
  config.responsesMax = envUint(env, 'LLAMAD_RESPONSES_MAX', 1000);
  config.responsesTtlMs = envDurationMs(env, 'LLAMAD_RESPONSES_TTL', config.responsesTtlMs);
  config.eventLoopWindowMs = Math.max(1000, envDurationMs(env, 'LLAMAD_EVENT_LOOP_WINDOW', config.eventLoopWindowMs));
  config.responsesMaxBytes = envUint(env, 'LLAMAD_RESPONSES_MAX_BYTES', config.responsesMaxBytes);
  config.managementBodyLimit = envUint(env, 'LLAMAD_MANAGEMENT_BODY_LIMIT', config.managementBodyLimit);
  config.allowServerPaths = /^(1|true|yes|on)$/i.test(envVar(env, 'LLAMAD_ALLOW_SERVER_PATHS'));
  config.logLevel = parseLogLevel(envVar(env, 'LLAMAD_LOG_LEVEL'), config.debugLevel);
  config.shutdownTimeoutMs = envDurationMs(env, 'LLAMAD_SHUTDOWN_TIMEOUT', DEFAULT_SHUTDOWN_TIMEOUT_MS);
  config.drainDelayMs = envDurationMs(env, 'LLAMAD_DRAIN_DELAY', 0);
  const flash = parseEnvBool(envVar(env, 'OLLAMA_FLASH_ATTENTION'));
  if (flash !== undefined) config.flashAttention = flash ? 'on' : 'off';
  config.kvCacheTypeRequested = envVar(env, 'OLLAMA_KV_CACHE_TYPE').toLowerCase();
  const kv = KV_CACHE_TYPES.find((t) => t === config.kvCacheTypeRequested);
  if (kv) config.kvCacheType = kv;
  const cacheRamMiB = envUint(env, 'LLAMAD_CACHE_RAM', -1);
  config.cacheRamMiB = cacheRamMiB >= 0 ? cacheRamMiB : defaultCacheRamMiB(memoryBytes());
  config.cacheScope = parseCacheScopeEnv(envVar(env, 'LLAMAD_CACHE_SCOPE'));
  config.loadTimeoutMs = parseLoadTimeoutEnv(envVar(env, 'OLLAMA_LOAD_TIMEOUT'));
  config.runnerHeartbeatTimeoutMs = parseHeartbeatTimeoutEnv(envVar(env, 'LLAMAD_RUNNER_HEARTBEAT_TIMEOUT'));
  config.runnerFaults = parseRunnerFaults(envVar(env, 'LLAMAD_TEST_RUNNER_FAULT'));
  config.redisUrl = parseRedisUrlEnv(envVar(env, 'LLAMAD_REDIS_URL'));
  config.maxAudioSeconds = parseMaxAudioSecondsEnv(envVar(env, 'LLAMAD_MAX_AUDIO_SECONDS'));
  config.metricsAddr = parseMetricsAddrEnv(envVar(env, 'LLAMAD_METRICS_ADDR'));
  config.ui = parseEnvBool(envVar(env, 'LLAMAD_UI')) ?? true;
  config.draftFixed = parseEnvBool(envVar(env, 'LLAMAD_DRAFT_FIXED')) ?? false;
  config.tracing = parseTracingEnv(env);
  return config;
}
