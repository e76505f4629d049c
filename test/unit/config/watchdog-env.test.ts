import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_LOAD_TIMEOUT_MS,
  DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS,
  loadConfig,
  parseLoadTimeoutEnv,
  parseRunnerFaults,
} from '../../../src/config';

describe('OLLAMA_LOAD_TIMEOUT (Ollama’s envconfig.LoadTimeout)', () => {
  it('defaults to 5 minutes', () => {
    assert.equal(DEFAULT_LOAD_TIMEOUT_MS, 300_000);
    assert.equal(loadConfig({}).loadTimeoutMs, 300_000);
  });

  it('reads a Go duration or integer seconds; ≤ 0 is no timeout; unparsable keeps the default', () => {
    assert.equal(loadConfig({ OLLAMA_LOAD_TIMEOUT: '10m' }).loadTimeoutMs, 600_000);
    assert.equal(loadConfig({ OLLAMA_LOAD_TIMEOUT: ' "1m30s" ' }).loadTimeoutMs, 90_000);
    assert.equal(parseLoadTimeoutEnv('1500ms'), 1500);
    assert.equal(parseLoadTimeoutEnv('45'), 45_000);
    assert.equal(parseLoadTimeoutEnv('0'), Infinity);
    assert.equal(parseLoadTimeoutEnv('-1'), Infinity);
    assert.equal(parseLoadTimeoutEnv('-5m'), Infinity);
    assert.equal(parseLoadTimeoutEnv('soon'), 300_000);
    assert.equal(parseLoadTimeoutEnv('1d'), 300_000);
    assert.equal(parseLoadTimeoutEnv(''), 300_000);
  });
});

describe('LLAMAD_RUNNER_HEARTBEAT_TIMEOUT', () => {
  it('defaults to 5 minutes; same syntax as OLLAMA_LOAD_TIMEOUT; ≤ 0 turns the watchdog off', () => {
    assert.equal(DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS, 300_000);
    assert.equal(loadConfig({}).runnerHeartbeatTimeoutMs, 300_000);
    assert.equal(loadConfig({ LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: '2s' }).runnerHeartbeatTimeoutMs, 2000);
    assert.equal(loadConfig({ LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: '120' }).runnerHeartbeatTimeoutMs, 120_000);
    assert.equal(loadConfig({ LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: '0' }).runnerHeartbeatTimeoutMs, Infinity);
    assert.equal(loadConfig({ LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: 'x' }).runnerHeartbeatTimeoutMs, 300_000);
  });
});

describe('LLAMAD_TEST_RUNNER_FAULT (test hook)', () => {
  it('reads model=fault pairs (model names keep their colons), dropping unknown faults and bad entries', () => {
    assert.deepEqual(loadConfig({}).runnerFaults, {});
    assert.deepEqual(parseRunnerFaults(' stuck:latest=load-hang , hung:latest = stall,x=explode,=stall,noeq'), {
      'stuck:latest': 'load-hang',
      'hung:latest': 'stall',
    });
    assert.deepEqual(loadConfig({ LLAMAD_TEST_RUNNER_FAULT: 'a=stall' }).runnerFaults, { a: 'stall' });
  });
});
