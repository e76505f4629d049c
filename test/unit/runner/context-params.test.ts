import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flashAttentionNote, kvParams } from '../../../src/runner/context-params';
import type { RunnerModelInfo } from '../../../src/runner/runner';
import { spec } from '../../utils/fake-runner';

const info = (flashAttention?: 'auto' | 'on' | 'off'): RunnerModelInfo => ({
  trainContext: 2048,
  addBos: true,
  bos: 1,
  hasChatTemplate: false,
  ...(flashAttention ? { flashAttention } : {}),
});

describe('context-params', () => {
  it('passes OLLAMA_FLASH_ATTENTION only when set, so that unset stays the addon default (auto)', () => {
    assert.deepEqual(kvParams(spec()), {});
    assert.deepEqual(kvParams(spec({ flashAttention: 'on', kvCacheType: 'q8_0' })), {
      flashAttn: 'on',
      typeK: 'q8_0',
      typeV: 'q8_0',
    });
  });

  it("notes in the load's log line only an unset setting that the context turned off (the CPU)", () => {
    assert.equal(
      flashAttentionNote(spec(), info('off')),
      ', flash attention off on the CPU (OLLAMA_FLASH_ATTENTION=1 turns it on)',
    );
    assert.equal(flashAttentionNote(spec(), info('auto')), '', "llama.cpp's choice");
    assert.equal(flashAttentionNote(spec({ flashAttention: 'off' }), info('off')), '', 'asked for');
    assert.equal(flashAttentionNote(spec(), info()), '', 'a fake runner');
  });
});
