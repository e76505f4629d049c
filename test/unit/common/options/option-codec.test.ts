import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { decodeOptions, formatParams, sanitizeStoredParams } from '../../../../src/common/options';

describe('formatParams (Modelfile PARAMETER typing)', () => {
  it('types values by the option table', () => {
    const { params, deprecated } = formatParams(
      new Map([
        ['temperature', ['0.7']],
        ['num_ctx', ['4096']],
        ['use_mmap', ['false']],
        ['stop', ['<|im_end|>', 'END']],
        ['seed', ['-1']],
      ]),
    );
    assert.deepEqual(params, {
      temperature: 0.7,
      num_ctx: 4096,
      use_mmap: false,
      stop: ['<|im_end|>', 'END'],
      seed: -1,
    });
    assert.deepEqual(deprecated, []);
  });

  it('skips deprecated parameters and reports them', () => {
    const { params, deprecated } = formatParams(new Map([['mirostat', ['1']]]));
    assert.deepEqual(params, {});
    assert.deepEqual(deprecated, ['mirostat']);
  });

  const errors: Array<[string, string, string]> = [
    ['bogus', '1', "unknown parameter 'bogus'"],
    ['num_ctx', '4k', 'invalid int value [4k]'],
    ['num_ctx', '1.5', 'invalid int value [1.5]'],
    ['temperature', 'hot', 'invalid float value [hot]'],
    ['use_mmap', 'maybe', 'invalid bool value [maybe]'],
    ['draft_num_predict', 'four', 'invalid int value [four]'],
  ];
  for (const [key, value, message] of errors) {
    it(`rejects ${key} ${value}`, () => {
      assert.throws(
        () => formatParams(new Map([[key, [value]]])),
        (err: unknown) => err instanceof InvalidRequestError && err.message === message,
      );
    });
  }
});

describe('decodeOptions (request options)', () => {
  it('keeps known options, truncates ints, ignores unknown keys and nulls', () => {
    assert.deepEqual(
      decodeOptions({ num_predict: 12.9, temperature: 0, stop: ['x'], mirostat: 2, whatever: 'x', seed: null }),
      { num_predict: 12, temperature: 0, stop: ['x'] },
    );
  });

  it('accepts draft_num_predict as an integer (truncated), in requests and Modelfile PARAMETERs', () => {
    assert.deepEqual(decodeOptions({ draft_num_predict: 6.7 }), { draft_num_predict: 6 });
    assert.deepEqual(formatParams(new Map([['draft_num_predict', ['3']]])).params, { draft_num_predict: 3 });
  });

  it('accepts draft_ngram (beyond Ollama) as a boolean, in requests and Modelfile PARAMETERs', () => {
    assert.deepEqual(decodeOptions({ draft_ngram: true }), { draft_ngram: true });
    assert.deepEqual(formatParams(new Map([['draft_ngram', ['true']]])).params, { draft_ngram: true });
    assert.throws(() => decodeOptions({ draft_ngram: 'yes' }), /draft_ngram/);
  });

  it('looks known names up instead of walking the keys: a flood of unknown keys is never enumerated', () => {
    // Issue 32: `options` with 100,000 keys cost ~100 ms of Object.entries on the event loop. A proxy whose key
    // enumeration throws proves the keys are not walked; inherited names (`constructor`, `toString`) are not options.
    const target: Record<string, unknown> = { num_predict: 3, temperature: 0.5, constructor: 1, toString: 2 };
    const options = new Proxy(target, {
      ownKeys: () => {
        throw new Error('the keys of options were enumerated');
      },
    });
    assert.deepEqual(decodeOptions(options), { temperature: 0.5, num_predict: 3 });
    assert.deepEqual(decodeOptions({ constructor: 1, __proto__: null, hasOwnProperty: 3 }), {});
  });

  it('accepts absent options', () => {
    assert.deepEqual(decodeOptions(undefined), {});
    assert.deepEqual(decodeOptions(null), {});
  });

  const errors: Array<[Record<string, unknown>, string]> = [
    [{ num_ctx: '4096' }, 'option "num_ctx" must be of type integer'],
    [{ temperature: 'hot' }, 'option "temperature" must be of type float32'],
    [{ use_mmap: 1 }, 'option "use_mmap" must be of type boolean'],
    [{ draft_num_predict: '4' }, 'option "draft_num_predict" must be of type integer'],
    [{ stop: 'x' }, 'option "stop" must be of type array'],
    [{ stop: ['x', 1] }, 'option "stop" must be of an array of strings'],
  ];
  for (const [options, message] of errors) {
    it(`rejects ${JSON.stringify(options)}`, () => {
      assert.throws(
        () => decodeOptions(options),
        (err: unknown) => err instanceof InvalidRequestError && err.message === message,
      );
    });
  }
});

describe('rpc (Modelfile-only list of RPC workers)', () => {
  it('splits PARAMETER rpc into host:port endpoints; none is an empty list', () => {
    const one = formatParams(new Map([['rpc', ['10.0.0.2:50052, worker:50053', '10.0.0.4:1']]]));
    assert.deepEqual(one.params.rpc, ['10.0.0.2:50052', 'worker:50053', '10.0.0.4:1']);
    assert.deepEqual(formatParams(new Map([['rpc', ['none']]])).params.rpc, []);
  });

  it('rejects entries that are not host:port', () => {
    for (const value of ['10.0.0.2', 'host:0', 'host:70000', '[::1]:50052', ':50052']) {
      assert.throws(
        () => formatParams(new Map([['rpc', [value]]])),
        (err: unknown) => err instanceof InvalidRequestError && err.message.startsWith(`invalid rpc value [${value}]`),
      );
    }
  });

  it('is ignored in request options (only a Modelfile may point the daemon at workers)', () => {
    assert.deepEqual(decodeOptions({ rpc: ['10.0.0.2:50052'], temperature: 0.5 }), { temperature: 0.5 });
  });
});

describe('sanitizeStoredParams', () => {
  it('drops unknown and ill-typed values from a params layer', () => {
    assert.deepEqual(sanitizeStoredParams({ temperature: 0.5, num_ctx: '4096', stop: 'x', foo: 1 }), {
      temperature: 0.5,
      stop: ['x'],
    });
    assert.deepEqual(sanitizeStoredParams([1, 2]), {});
  });
});
