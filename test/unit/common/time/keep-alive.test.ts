import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { parseGoDuration } from '../../../../src/common/time/go-duration';
import {
  DEFAULT_KEEP_ALIVE_MS,
  parseCompatKeepAlive,
  parseKeepAlive,
  parseKeepAliveEnv,
} from '../../../../src/common/time/keep-alive';

describe('parseGoDuration (time.ParseDuration)', () => {
  const ok: Array<[string, number]> = [
    ['0', 0],
    ['300ms', 300e6],
    ['10m', 600e9],
    ['1h30m', 5400e9],
    ['1.5s', 1.5e9],
    ['.5s', 0.5e9],
    ['-1m', -60e9],
    ['+2s', 2e9],
    ['1us', 1e3],
    ['1µs', 1e3],
    ['2h45m0.5s', 2 * 3600e9 + 45 * 60e9 + 0.5e9],
  ];
  for (const [input, ns] of ok) it(`${input} = ${ns} ns`, () => assert.equal(parseGoDuration(input), ns));

  const bad: Array<[string, string]> = [
    ['300', 'time: missing unit in duration "300"'],
    ['', 'time: invalid duration ""'],
    ['abc', 'time: invalid duration "abc"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['-', 'time: invalid duration "-"'],
    ['.s', 'time: invalid duration ".s"'],
  ];
  for (const [input, message] of bad) {
    it(`rejects ${JSON.stringify(input)}`, () => assert.throws(() => parseGoDuration(input), { message }));
  }
});

describe('parseKeepAlive (api.Duration)', () => {
  it('is undefined when absent or null', () => {
    assert.equal(parseKeepAlive(undefined), undefined);
    assert.equal(parseKeepAlive(null), undefined);
  });

  it('reads numbers as seconds', () => {
    assert.equal(parseKeepAlive(0), 0);
    assert.equal(parseKeepAlive(1.5), 1500);
    assert.equal(parseKeepAlive(300), 300_000);
  });

  it('reads strings as Go durations', () => {
    assert.equal(parseKeepAlive('5m'), 300_000);
    assert.equal(parseKeepAlive('0'), 0);
  });

  it('maps negatives to forever', () => {
    assert.equal(parseKeepAlive(-1), Infinity);
    assert.equal(parseKeepAlive('-1m'), Infinity);
  });

  it('rejects a bare numeric string with Go’s message', () => {
    assert.throws(
      () => parseKeepAlive('300'),
      (err: unknown) => err instanceof InvalidRequestError && err.message === 'time: missing unit in duration "300"',
    );
  });

  it('rejects other JSON types with Unsupported type', () => {
    assert.throws(() => parseKeepAlive(true), { message: "Unsupported type: 'bool'" });
    assert.throws(() => parseKeepAlive([1]), { message: "Unsupported type: '[]interface {}'" });
    assert.throws(() => parseKeepAlive({}), { message: "Unsupported type: 'map[string]interface {}'" });
  });
});

describe('parseKeepAliveEnv (OLLAMA_KEEP_ALIVE)', () => {
  it('defaults to 5 minutes', () => {
    assert.equal(parseKeepAliveEnv(undefined), DEFAULT_KEEP_ALIVE_MS);
    assert.equal(parseKeepAliveEnv(''), DEFAULT_KEEP_ALIVE_MS);
    assert.equal(parseKeepAliveEnv('garbage'), DEFAULT_KEEP_ALIVE_MS);
  });

  it('accepts durations and plain integer seconds', () => {
    assert.equal(parseKeepAliveEnv('10m'), 600_000);
    assert.equal(parseKeepAliveEnv('300'), 300_000);
    assert.equal(parseKeepAliveEnv('-1'), Infinity);
  });
});

describe('parseCompatKeepAlive (keep_alive on the compatibility routes)', () => {
  it('decodes like parseKeepAlive', () => {
    assert.equal(parseCompatKeepAlive(undefined), undefined);
    assert.equal(parseCompatKeepAlive(null), undefined);
    assert.equal(parseCompatKeepAlive(0), 0);
    assert.equal(parseCompatKeepAlive(90), 90_000);
    assert.equal(parseCompatKeepAlive('5m'), 300_000);
    assert.equal(parseCompatKeepAlive(-1), Infinity);
    assert.equal(parseCompatKeepAlive('-1s'), Infinity);
  });

  it('names the field in its errors (param keep_alive)', () => {
    for (const [value, message] of [
      ['300', 'invalid keep_alive: time: missing unit in duration "300"'],
      [false, "invalid keep_alive: Unsupported type: 'bool'"],
      [[1], "invalid keep_alive: Unsupported type: '[]interface {}'"],
    ] as Array<[unknown, string]>) {
      assert.throws(
        () => parseCompatKeepAlive(value),
        (err: unknown) => err instanceof InvalidRequestError && err.message === message && err.param === 'keep_alive',
      );
    }
  });
});
