import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  crashCause,
  exitReason,
  featureOfReason,
  goExitText,
  illegalInstructionReason,
  isIllegalInstruction,
  lastMeaningfulLine,
  StderrRing,
  trappedCpuFeature,
} from '../../../src/runner';

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

  it('a SIGILL names the CPU feature of ggml’s probe line, else reads as Go’s signal text', () => {
    const probe = 'cpu: AVX512F advertised by CPUID but its first instruction traps (SIGILL): CPU backend variants …';
    const amx = 'cpu: AMX advertised by CPUID but its first instruction traps (SIGILL): AMX disabled';
    assert.equal(trappedCpuFeature(['llama_model_load: x', probe, 'later']), 'AVX512F');
    assert.equal(trappedCpuFeature([probe, amx]), 'AMX', 'the last probe line wins');
    assert.equal(trappedCpuFeature(['error: something']), undefined);
    // the probe line is not taken for the runner's error: the reason is the signal with the feature
    assert.equal(exitReason(null, 'SIGILL', ['load', amx, '']), 'signal: illegal instruction (CPU feature AMX)');
    assert.equal(exitReason(null, 'SIGILL', ['load', 'error: unrelated']), 'signal: illegal instruction');
    assert.equal(exitReason(null, 'SIGILL', []), 'signal: illegal instruction');
    assert.equal(crashCause(null, 'SIGILL', [amx]), 'signal');
    // other deaths keep their reasons even after a probe line
    assert.equal(exitReason(null, 'SIGABRT', [amx, 'GGML_ASSERT(x) failed']), 'GGML_ASSERT(x) failed');
    assert.equal(exitReason(null, 'SIGSEGV', []), 'signal: segmentation fault');
    assert.equal(illegalInstructionReason('AMX'), 'signal: illegal instruction (CPU feature AMX)');
    assert.equal(illegalInstructionReason(undefined), 'signal: illegal instruction');
    assert.equal(isIllegalInstruction('signal: illegal instruction (CPU feature AMX)'), true);
    assert.equal(isIllegalInstruction('signal: illegal instruction'), true);
    assert.equal(isIllegalInstruction('signal: segmentation fault'), false);
    assert.equal(isIllegalInstruction('GGML_ASSERT(signal: illegal instruction)'), false);
    assert.equal(featureOfReason('signal: illegal instruction (CPU feature AVX512_VNNI)'), 'AVX512_VNNI');
    assert.equal(featureOfReason('signal: illegal instruction'), undefined);
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
