import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_MAX_AUDIO_SECONDS, loadConfig, parseMaxAudioSecondsEnv } from '../../../src/config';
import { InvalidConfigError } from '../../../src/common/errors';

describe('LLAMAD_MAX_AUDIO_SECONDS', () => {
  it('is 600 s when unset; seconds or a Go duration; 0 = no bound', () => {
    assert.equal(parseMaxAudioSecondsEnv(''), DEFAULT_MAX_AUDIO_SECONDS);
    assert.equal(DEFAULT_MAX_AUDIO_SECONDS, 600);
    assert.equal(parseMaxAudioSecondsEnv('90'), 90);
    assert.equal(parseMaxAudioSecondsEnv('2.5'), 2.5);
    assert.equal(parseMaxAudioSecondsEnv('10m'), 600);
    assert.equal(parseMaxAudioSecondsEnv('1m30s'), 90);
    assert.equal(parseMaxAudioSecondsEnv('0'), 0);
  });

  it('refuses negative or unparsable values at start-up', () => {
    for (const raw of ['-1', 'ten', '5x', '-2m']) {
      assert.throws(() => parseMaxAudioSecondsEnv(raw), InvalidConfigError, raw);
    }
  });

  it('reaches DaemonConfig.maxAudioSeconds', () => {
    assert.equal(loadConfig({ LLAMAD_MAX_AUDIO_SECONDS: '5' }).maxAudioSeconds, 5);
    assert.equal(loadConfig({}).maxAudioSeconds, 600);
  });
});
