import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  CACHE_RAM_MEMORY_SHARE,
  DaemonConfig,
  DEFAULT_CACHE_RAM_MIB,
  DEFAULT_MAX_LORAS,
  defaultCacheRamMiB,
  kvCacheSettings,
  loadConfig,
  parseEnvBool,
  parseListenAddress,
} from '../../../src/config';

describe('parseListenAddress (OLLAMA_HOST)', () => {
  const cases: Array<[string, { scheme: string; host: string; port: number }]> = [
    ['0.0.0.0', { scheme: 'http', host: '0.0.0.0', port: 11434 }],
    ['127.0.0.1:8080', { scheme: 'http', host: '127.0.0.1', port: 8080 }],
    [':9999', { scheme: 'http', host: '', port: 9999 }],
    ['http://example.com', { scheme: 'http', host: 'example.com', port: 80 }],
    ['https://example.com', { scheme: 'https', host: 'example.com', port: 443 }],
    ['http://localhost:1234/path', { scheme: 'http', host: 'localhost', port: 1234 }],
    ['[::1]:7000', { scheme: 'http', host: '::1', port: 7000 }],
    ['::1', { scheme: 'http', host: '::1', port: 11434 }],
    ['localhost:99999', { scheme: 'http', host: 'localhost', port: 11434 }],
    ['ollama.com', { scheme: 'https', host: 'ollama.com', port: 443 }],
  ];
  for (const [input, expected] of cases) {
    it(`${input}`, () => assert.deepEqual(parseListenAddress(input), expected));
  }
});

describe('loadConfig', () => {
  it('uses Ollama’s defaults for an empty environment', () => {
    const c = loadConfig({});
    assert.deepEqual(c.listen, { scheme: 'http', host: '127.0.0.1', port: 11434 });
    assert.equal(c.modelsDir, join(homedir(), '.ollama', 'models'));
    assert.equal(c.keepAliveMs, 300_000);
    assert.equal(c.numParallel, 0);
    assert.equal(c.contextLength, 0);
    assert.equal(c.maxQueue, 512);
    assert.deepEqual(c.origins, []);
    assert.equal(c.debugLevel, 0);
    assert.equal(c.threads, 0);
  });

  it('reads every variable, trimming spaces and quotes', () => {
    const c = loadConfig({
      OLLAMA_HOST: ' "0.0.0.0:8000" ',
      OLLAMA_MODELS: '/srv/models',
      OLLAMA_KEEP_ALIVE: '-1',
      OLLAMA_NUM_PARALLEL: '4',
      OLLAMA_CONTEXT_LENGTH: '8192',
      OLLAMA_MAX_LOADED_MODELS: '2',
      OLLAMA_MAX_QUEUE: '7',
      OLLAMA_ORIGINS: 'chrome-extension://*, moz-extension://*',
      OLLAMA_DEBUG: 'true',
      LLAMAD_THREADS: '3',
    });
    assert.deepEqual(c.listen, { scheme: 'http', host: '0.0.0.0', port: 8000 });
    assert.equal(c.modelsDir, '/srv/models');
    assert.equal(c.keepAliveMs, Infinity);
    assert.equal(c.numParallel, 4);
    assert.equal(c.contextLength, 8192);
    assert.equal(c.maxLoadedModels, 2);
    assert.equal(c.maxQueue, 7);
    assert.deepEqual(c.origins, ['chrome-extension://*', 'moz-extension://*']);
    assert.equal(c.debugLevel, 1);
    assert.equal(c.threads, 3);
  });

  it('reads LLAMAD_RPC_SERVERS as host:port entries, dropping the others', () => {
    const c = loadConfig({ LLAMAD_RPC_SERVERS: ' 10.0.0.2:50052, ,worker-b:50053,nope,10.0.0.2:50052,[::1]:1 ' });
    assert.deepEqual(c.rpcServers, ['10.0.0.2:50052', 'worker-b:50053']);
    assert.deepEqual(loadConfig({}).rpcServers, []);
  });

  it('expands ~ in OLLAMA_MODELS and ignores invalid numbers', () => {
    const c = loadConfig({ OLLAMA_MODELS: '~/m', OLLAMA_NUM_PARALLEL: 'many', OLLAMA_MAX_QUEUE: '-1' });
    assert.equal(c.modelsDir, join(homedir(), 'm'));
    assert.equal(c.numParallel, 0);
    assert.equal(c.maxQueue, 512);
  });

  it('reads LLAMAD_API_KEYS as a list and LLAMAD_API_KEYS_FILE as an absolute path', () => {
    const c = loadConfig({ LLAMAD_API_KEYS: ' k1, ,k2 ', LLAMAD_API_KEYS_FILE: '~/keys.txt' });
    assert.deepEqual(c.apiKeys, ['k1', 'k2']);
    assert.equal(c.apiKeysFile, join(homedir(), 'keys.txt'));
    const none = loadConfig({});
    assert.deepEqual(none.apiKeys, []);
    assert.equal(none.apiKeysFile, '');
  });

  it('reads the /v1/responses store limits (count, Go-duration TTL; bare numbers are seconds)', () => {
    const d = loadConfig({});
    assert.equal(d.responsesMax, 1000);
    assert.equal(d.responsesTtlMs, 3_600_000);
    const c = loadConfig({ LLAMAD_RESPONSES_MAX: '0', LLAMAD_RESPONSES_TTL: '1h30m' });
    assert.equal(c.responsesMax, 0);
    assert.equal(c.responsesTtlMs, 5_400_000);
    assert.equal(loadConfig({ LLAMAD_RESPONSES_TTL: '90' }).responsesTtlMs, 90_000);
    assert.equal(loadConfig({ LLAMAD_RESPONSES_TTL: 'soon' }).responsesTtlMs, 3_600_000);
    assert.equal(loadConfig({ LLAMAD_RESPONSES_TTL: '-5m' }).responsesTtlMs, 3_600_000);
  });

  it('reads the issue-23 limits: responses bytes, management body limit, server paths with keys', () => {
    const d = loadConfig({});
    assert.equal(d.responsesMaxBytes, 256 * 1024 * 1024);
    assert.equal(d.managementBodyLimit, 1024 * 1024);
    assert.equal(d.allowServerPaths, false);
    const c = loadConfig({
      LLAMAD_RESPONSES_MAX_BYTES: '1000',
      LLAMAD_MANAGEMENT_BODY_LIMIT: '4096',
      LLAMAD_ALLOW_SERVER_PATHS: '1',
    });
    assert.equal(c.responsesMaxBytes, 1000);
    assert.equal(c.managementBodyLimit, 4096);
    assert.equal(c.allowServerPaths, true);
    assert.equal(loadConfig({ LLAMAD_ALLOW_SERVER_PATHS: '0' }).allowServerPaths, false);
  });

  it('reads LLAMAD_LOG_LEVEL, falling back to OLLAMA_DEBUG (1 → debug, 2 → trace), else info', () => {
    assert.equal(loadConfig({}).logLevel, 'info');
    assert.equal(loadConfig({ LLAMAD_LOG_LEVEL: 'warn' }).logLevel, 'warn');
    assert.equal(loadConfig({ LLAMAD_LOG_LEVEL: ' "ERROR" ' }).logLevel, 'error');
    assert.equal(loadConfig({ LLAMAD_LOG_LEVEL: 'silent' }).logLevel, 'silent');
    assert.equal(loadConfig({ OLLAMA_DEBUG: '1' }).logLevel, 'debug');
    assert.equal(loadConfig({ OLLAMA_DEBUG: 'true' }).logLevel, 'debug');
    assert.equal(loadConfig({ OLLAMA_DEBUG: '2' }).logLevel, 'trace');
    assert.equal(loadConfig({ OLLAMA_DEBUG: '1', LLAMAD_LOG_LEVEL: 'error' }).logLevel, 'error');
    assert.equal(loadConfig({ LLAMAD_LOG_LEVEL: 'chatty', OLLAMA_DEBUG: '1' }).logLevel, 'debug');
    assert.equal(loadConfig({ LLAMAD_LOG_LEVEL: 'chatty' }).logLevel, 'info');
  });

  it('reads LLAMAD_SHUTDOWN_TIMEOUT as a Go duration or seconds (default 30 s)', () => {
    assert.equal(loadConfig({}).shutdownTimeoutMs, 30_000);
    assert.equal(loadConfig({ LLAMAD_SHUTDOWN_TIMEOUT: '2m' }).shutdownTimeoutMs, 120_000);
    assert.equal(loadConfig({ LLAMAD_SHUTDOWN_TIMEOUT: '1500ms' }).shutdownTimeoutMs, 1500);
    assert.equal(loadConfig({ LLAMAD_SHUTDOWN_TIMEOUT: '45' }).shutdownTimeoutMs, 45_000);
    assert.equal(loadConfig({ LLAMAD_SHUTDOWN_TIMEOUT: '0' }).shutdownTimeoutMs, 0);
    assert.equal(loadConfig({ LLAMAD_SHUTDOWN_TIMEOUT: 'later' }).shutdownTimeoutMs, 30_000);
  });

  it('reads LLAMAD_DRAIN_DELAY as a Go duration or seconds (default 0: the listener closes at once)', () => {
    assert.equal(loadConfig({}).drainDelayMs, 0);
    assert.equal(loadConfig({ LLAMAD_DRAIN_DELAY: '2s' }).drainDelayMs, 2000);
    assert.equal(loadConfig({ LLAMAD_DRAIN_DELAY: '750ms' }).drainDelayMs, 750);
    assert.equal(loadConfig({ LLAMAD_DRAIN_DELAY: '5' }).drainDelayMs, 5000);
    assert.equal(loadConfig({ LLAMAD_DRAIN_DELAY: 'soon' }).drainDelayMs, 0);
  });

  it('reads LLAMAD_UI as a bool (default on; 0/false turn the web UI off)', () => {
    assert.equal(loadConfig({}).ui, true);
    assert.equal(loadConfig({ LLAMAD_UI: '0' }).ui, false);
    assert.equal(loadConfig({ LLAMAD_UI: 'false' }).ui, false);
    assert.equal(loadConfig({ LLAMAD_UI: '1' }).ui, true);
  });

  it('reads LLAMAD_DRAFT_FIXED as a bool (default off: the cost model decides)', () => {
    assert.equal(loadConfig({}).draftFixed, false);
    assert.equal(loadConfig({ LLAMAD_DRAFT_FIXED: '1' }).draftFixed, true);
    assert.equal(loadConfig({ LLAMAD_DRAFT_FIXED: 'true' }).draftFixed, true);
    assert.equal(loadConfig({ LLAMAD_DRAFT_FIXED: '0' }).draftFixed, false);
  });
});

describe('OLLAMA_FLASH_ATTENTION and OLLAMA_KV_CACHE_TYPE', () => {
  it('parses bools like Ollama’s envconfig.Bool (ParseBool; unparsable text is true; unset is undefined)', () => {
    for (const t of ['1', 't', 'T', 'TRUE', 'true', 'True', 'yes', 'on', '2']) assert.equal(parseEnvBool(t), true, t);
    for (const f of ['0', 'f', 'F', 'FALSE', 'false', 'False']) assert.equal(parseEnvBool(f), false, f);
    assert.equal(parseEnvBool(''), undefined);
  });

  it('reads flash attention: unset → auto, true → on, false → off (quotes and spaces trimmed)', () => {
    assert.equal(loadConfig({}).flashAttention, 'auto');
    assert.equal(loadConfig({ OLLAMA_FLASH_ATTENTION: '1' }).flashAttention, 'on');
    assert.equal(loadConfig({ OLLAMA_FLASH_ATTENTION: ' "true" ' }).flashAttention, 'on');
    assert.equal(loadConfig({ OLLAMA_FLASH_ATTENTION: 'false' }).flashAttention, 'off');
    assert.equal(loadConfig({ OLLAMA_FLASH_ATTENTION: '0' }).flashAttention, 'off');
    assert.equal(loadConfig({ OLLAMA_FLASH_ATTENTION: '' }).flashAttention, 'auto');
  });

  it('reads the KV cache type case-insensitively; unset or unknown is f16', () => {
    assert.equal(loadConfig({}).kvCacheType, 'f16');
    assert.equal(loadConfig({ OLLAMA_KV_CACHE_TYPE: 'q8_0' }).kvCacheType, 'q8_0');
    assert.equal(loadConfig({ OLLAMA_KV_CACHE_TYPE: 'Q4_0' }).kvCacheType, 'q4_0');
    assert.equal(loadConfig({ OLLAMA_KV_CACHE_TYPE: 'q5_1' }).kvCacheType, 'f16');
  });

  it('applies a quantized type only with flash attention on, else f16 with a warning (Ollama’s rule)', () => {
    const env = (fa: string | undefined, kv: string) =>
      kvCacheSettings(
        loadConfig({ OLLAMA_KV_CACHE_TYPE: kv, ...(fa === undefined ? {} : { OLLAMA_FLASH_ATTENTION: fa }) }),
      );
    assert.deepEqual(env('1', 'q8_0'), { flashAttention: 'on', kvCacheType: 'q8_0' });
    assert.deepEqual(env('1', 'q4_0'), { flashAttention: 'on', kvCacheType: 'q4_0' });
    for (const fa of [undefined, '0']) {
      const s = env(fa, 'q8_0');
      assert.equal(s.kvCacheType, 'f16');
      assert.match(s.warning ?? '', /OLLAMA_FLASH_ATTENTION must be enabled to use a quantized OLLAMA_KV_CACHE_TYPE/);
    }
    assert.deepEqual(env('0', 'f16'), { flashAttention: 'off', kvCacheType: 'f16' });
    assert.deepEqual(env(undefined, ''), { flashAttention: 'auto', kvCacheType: 'f16' });
    const unknown = env('1', 'q5_1');
    assert.equal(unknown.kvCacheType, 'f16');
    assert.match(unknown.warning ?? '', /unsupported OLLAMA_KV_CACHE_TYPE "q5_1"/);
  });
});

describe('LLAMAD_CACHE_RAM', () => {
  const GIB = 2 ** 30;
  const never = () => assert.fail('the memory is read only when LLAMAD_CACHE_RAM is unset');

  it('defaults to a quarter of the daemon memory, at most 8192 MiB (llama-server --cache-ram)', () => {
    assert.equal(loadConfig({}, () => 10 * GIB).cacheRamMiB, 2560);
    assert.equal(loadConfig({}, () => 4 * GIB + 3).cacheRamMiB, 1024);
    assert.equal(loadConfig({}, () => 32 * GIB).cacheRamMiB, 8192);
    assert.equal(loadConfig({}, () => 256 * GIB).cacheRamMiB, 8192);
    assert.equal(loadConfig({}, () => 0).cacheRamMiB, 0);
  });

  it('defaultCacheRamMiB rounds down to whole MiB and never goes negative', () => {
    assert.equal(defaultCacheRamMiB(4 * 2 ** 20 - 1), 0);
    assert.equal(defaultCacheRamMiB(4 * 2 ** 20), 1);
    assert.equal(defaultCacheRamMiB(-1), 0);
    assert.equal(CACHE_RAM_MEMORY_SHARE * 4, 1);
  });

  it('reads the daemon-wide budget in MiB; 0 disables the cache', () => {
    assert.equal(loadConfig({ LLAMAD_CACHE_RAM: '512' }, never).cacheRamMiB, 512);
    assert.equal(loadConfig({ LLAMAD_CACHE_RAM: ' "1024" ' }, never).cacheRamMiB, 1024);
    assert.equal(loadConfig({ LLAMAD_CACHE_RAM: '0' }, never).cacheRamMiB, 0);
    assert.equal(loadConfig({ LLAMAD_CACHE_RAM: '65536' }, never).cacheRamMiB, 65536);
  });

  it('keeps the default for a value that is not a whole number of MiB', () => {
    for (const raw of ['-1', '1.5', '8G', 'off', '']) {
      assert.equal(loadConfig({ LLAMAD_CACHE_RAM: raw }, () => 8 * GIB).cacheRamMiB, 2048, raw);
    }
  });

  it('a DaemonConfig built by hand has the 8192 MiB cap as its budget', () => {
    assert.equal(new DaemonConfig().cacheRamMiB, DEFAULT_CACHE_RAM_MIB);
    assert.equal(DEFAULT_CACHE_RAM_MIB, 8192);
  });
});

describe('LLAMAD_MAX_LORAS', () => {
  it('defaults to 4 adapters resident per base model', () => {
    assert.equal(DEFAULT_MAX_LORAS, 4);
    assert.equal(loadConfig({}, () => 0).maxLoras, 4);
    assert.equal(new DaemonConfig().maxLoras, 4);
  });

  it('takes an integer from 1 to 64', () => {
    assert.equal(loadConfig({ LLAMAD_MAX_LORAS: '1' }, () => 0).maxLoras, 1);
    assert.equal(loadConfig({ LLAMAD_MAX_LORAS: ' "16" ' }, () => 0).maxLoras, 16);
    assert.equal(loadConfig({ LLAMAD_MAX_LORAS: '64' }, () => 0).maxLoras, 64);
  });

  it('keeps the default for a value outside 1..64 or not an integer', () => {
    for (const raw of ['0', '65', '-2', '2.5', 'many', '']) {
      assert.equal(loadConfig({ LLAMAD_MAX_LORAS: raw }, () => 0).maxLoras, 4, raw);
    }
  });
});
