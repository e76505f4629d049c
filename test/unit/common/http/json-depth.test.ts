import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { checkJsonDepth, jsonDepth, MAX_JSON_DEPTH } from '../../../../src/common/http';

describe('JSON depth limit', () => {
  it('counts arrays and objects, not brackets inside strings or escapes', () => {
    assert.equal(jsonDepth('1'), 0);
    assert.equal(jsonDepth('{"a":[1,{"b":[]}]}'), 4);
    assert.equal(jsonDepth('{"a":"[[[[{{{{"}'), 1);
    assert.equal(jsonDepth('{"a":"\\"[[["}'), 1);
    assert.equal(jsonDepth('["\\\\",[[]]]'), 3);
  });

  it('stops scanning once the limit is passed', () => {
    assert.equal(jsonDepth('['.repeat(100_000), 10), 11);
  });

  it('checkJsonDepth accepts the limit and refuses one more level with a 400-class error', () => {
    const at = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    assert.doesNotThrow(() => checkJsonDepth(at));
    assert.throws(() => checkJsonDepth('[' + at + ']'), InvalidRequestError);
    assert.ok(MAX_JSON_DEPTH <= 1000);
  });
});
