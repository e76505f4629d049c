import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crashCause, exitReason, goExitText, lastMeaningfulLine, StderrRing } from '../../../src/runner';

describe('runner exit reasons (Ollama wording)', () => {
  it('picks the GGML_ASSERT line from the marker on, past backtrace noise', () => {
    const lines = [
      'llama_context: n_ctx = 256',
      '/build/llama.cpp/ggml/src/ggml.c:2907: GGML_ASSERT(ggml_can_mul_mat(k, q)) failed',
      '[New LWP 4242]',
      '#0  0x00007f9 in __GI___wait4 () at ../sysdeps/unix/sysv/linux/wait4.c:30',
      '/lib/libggml-base.so(+0x1a2b3) [0x7f00]',
      '',
    ];
    assert.equal(lastMeaningfulLine(lines), 'GGML_ASSERT(ggml_can_mul_mat(k, q)) failed');
    assert.equal(exitReason(null, 'SIGABRT', lines), 'GGML_ASSERT(ggml_can_mul_mat(k, q)) failed');
  });

  it('falls back to the last non-noise line, then to Go exit texts', () => {
    assert.equal(
      lastMeaningfulLine(['loading', 'something odd happened', '', '#1 0x1 in f ()']),
      'something odd happened',
    );
    assert.equal(lastMeaningfulLine(['', '  ']), undefined);
    assert.equal(goExitText(2, null), 'exit status 2');
    assert.equal(goExitText(null, 'SIGABRT'), 'signal: aborted');
    assert.equal(goExitText(null, 'SIGKILL'), 'signal: killed');
    assert.equal(goExitText(null, 'SIGSEGV'), 'signal: segmentation fault');
    assert.equal(exitReason(null, 'SIGKILL', []), 'signal: killed');
  });

  it('classifies causes with low cardinality', () => {
    assert.equal(crashCause(null, 'SIGABRT', []), 'abort');
    assert.equal(crashCause(null, 'SIGKILL', []), 'signal');
    assert.equal(crashCause(1, null, []), 'exit');
    assert.equal(
      crashCause(null, 'SIGABRT', ["terminate called after throwing an instance of 'std::bad_alloc'"]),
      'oom',
    );
  });

  it('keeps the last lines, joining chunks', () => {
    const ring = new StderrRing(2);
    assert.deepEqual(ring.push('a\nb'), ['a']);
    assert.deepEqual(ring.push('c\nd\n'), ['bc', 'd']);
    assert.deepEqual(ring.push('tail'), []);
    assert.equal(ring.end(), 'tail');
    assert.deepEqual(ring.snapshot(), ['d', 'tail']);
  });
});
