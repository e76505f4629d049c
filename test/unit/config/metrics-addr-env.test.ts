import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidConfigError } from '../../../src/common/errors';
import { loadConfig } from '../../../src/config';
import { parseMetricsAddrEnv } from '../../../src/config/metrics-addr-env';

describe('LLAMAD_METRICS_ADDR', () => {
  it('accepts host:port, :port and [v6]:port; unset means no second listener', () => {
    assert.equal(parseMetricsAddrEnv(''), undefined);
    assert.deepEqual(parseMetricsAddrEnv('0.0.0.0:9464'), { host: '0.0.0.0', port: 9464 });
    assert.deepEqual(parseMetricsAddrEnv(':9464'), { host: '', port: 9464 });
    assert.deepEqual(parseMetricsAddrEnv('[::1]:0'), { host: '::1', port: 0 });
    assert.deepEqual(parseMetricsAddrEnv('metrics.local:80'), { host: 'metrics.local', port: 80 });
    assert.deepEqual(loadConfig({ LLAMAD_METRICS_ADDR: ' 127.0.0.1:9464 ' }, () => 2 ** 30).metricsAddr, {
      host: '127.0.0.1',
      port: 9464,
    });
    assert.equal(loadConfig({}, () => 2 ** 30).metricsAddr, undefined);
  });

  it('refuses anything else at start-up', () => {
    for (const bad of ['9464', '0.0.0.0', 'http://0.0.0.0:9464', '0.0.0.0:70000', '::1:9464', '[x]:1', 'h:1/metrics']) {
      assert.throws(() => parseMetricsAddrEnv(bad), InvalidConfigError, bad);
    }
  });
});
