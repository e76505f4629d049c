import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import {
  checkJsonDepth,
  checkJsonShape,
  checkValueDepth,
  jsonDepth,
  jsonShape,
  markShapeChecked,
  MAX_JSON_DEPTH,
  MAX_JSON_MEMBERS,
} from '../../../../src/common/http';

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

  it('jsonShape counts the members of each object, not of arrays, strings or nested objects', () => {
    assert.deepEqual(jsonShape('{"a":1,"b":{"c":2},"d":[{"e":3,"f":4,"g":":::"}]}'), { depth: 3, members: 3 });
    assert.deepEqual(jsonShape('[1,2,3,"a:b"]'), { depth: 1, members: 0 });
    assert.deepEqual(jsonShape('{"k\\\\":":","x":{}}'), { depth: 2, members: 2 });
  });

  it('jsonShape stops once an object passes the members limit', () => {
    const members = Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(',');
    assert.deepEqual(jsonShape(`{"options":{${members}}}`, MAX_JSON_DEPTH, 10), { depth: 2, members: 11 });
  });

  it('checkJsonShape refuses an object of more than MAX_JSON_MEMBERS members with a 400-class error', () => {
    const body = (n: number) =>
      JSON.stringify({ model: 'm', options: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])) });
    assert.doesNotThrow(() => checkJsonShape(body(MAX_JSON_MEMBERS)));
    assert.throws(
      () => checkJsonShape(body(MAX_JSON_MEMBERS + 1)),
      (err: unknown) =>
        err instanceof InvalidRequestError &&
        err.message === `request body has an object with more than ${MAX_JSON_MEMBERS} members`,
    );
    // As many members spread over several objects are fine (each object is checked on its own).
    const spread = JSON.stringify([body(MAX_JSON_MEMBERS / 2), JSON.parse(body(MAX_JSON_MEMBERS / 2)) as unknown]);
    assert.doesNotThrow(() => checkJsonShape(spread));
    assert.throws(() => checkJsonShape('['.repeat(MAX_JSON_DEPTH + 1)), /nested too deeply/);
  });

  it('checkValueDepth skips a value the body parser already checked, and walks any other', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) deep = [deep];
    assert.throws(() => checkValueDepth(deep), InvalidRequestError);
    const marked = [deep];
    markShapeChecked(marked);
    assert.doesNotThrow(() => checkValueDepth(marked)); // only a parser that checked the text marks a value
    assert.throws(() => checkValueDepth(marked, 10), InvalidRequestError); // a smaller limit still walks
  });
});
