import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bearerToken,
  hostOfHeader,
  HostPolicy,
  MAX_API_KEY_LENGTH,
  MAX_AUTHORIZATION_LENGTH,
  MAX_HOST_LENGTH,
  MAX_ORIGIN_LENGTH,
  OriginPolicy,
  presentedKeys,
  WildcardPattern,
} from '../../../src/security';
import { requestIdFrom } from '../../../src/observability';
import { mulberry32 } from '../../utils/prng';

/** The regular expression the Bearer parser replaced: the reference its answers must equal below the cap. */
const OLD_BEARER = /^\s*bearer\s+(.+?)\s*$/i;

function randomText(next: () => number, alphabet: string, max: number): string {
  let out = '';
  const length = Math.floor(next() * max);
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * alphabet.length)];
  return out;
}

describe('header values without regular expressions (issue 32)', () => {
  it('bearerToken answers as the old regex did on every short value', () => {
    const fixed = [
      'Bearer abc',
      'bearer  abc ',
      'BEARER\tk',
      'Bearer',
      'Bearer ',
      'Bearerx',
      ' Bearer a b ',
      'Basic a',
    ];
    const next = mulberry32(32);
    const generated = Array.from({ length: 3000 }, () => randomText(next, 'Bbearer \t\u00a0xy', 14));
    for (const value of [...fixed, ...generated]) {
      assert.equal(bearerToken(value), OLD_BEARER.exec(value)?.[1], JSON.stringify(value));
    }
  });

  it('an Authorization value over the cap presents no key, whatever it holds', () => {
    const long = `Bearer ${'k'.repeat(MAX_AUTHORIZATION_LENGTH)}`;
    assert.equal(bearerToken(long), undefined);
    assert.deepEqual(presentedKeys({ authorization: long }), []);
    // 15 KB of the old regex's worst case (spaces that `\s+` and `\s*` both want) is just too long now.
    assert.deepEqual(presentedKeys({ authorization: `Bearer ${' '.repeat(15_000)}x ` }), []);
    const justFits = `Bearer ${'k'.repeat(MAX_AUTHORIZATION_LENGTH - 7)}`;
    assert.equal(bearerToken(justFits), 'k'.repeat(MAX_AUTHORIZATION_LENGTH - 7));
  });

  it('an x-api-key value over the cap presents no key; shorter ones are trimmed', () => {
    assert.deepEqual(presentedKeys({ 'x-api-key': 'x'.repeat(MAX_API_KEY_LENGTH + 1) }), []);
    assert.deepEqual(presentedKeys({ 'x-api-key': ['  a ', 'x'.repeat(MAX_API_KEY_LENGTH + 1), ' '] }), ['a']);
  });

  it('WildcardPattern matches as an anchored `.*` regex does', () => {
    const next = mulberry32(7);
    for (let round = 0; round < 400; round++) {
      const pattern = randomText(next, 'ab*.', 7);
      const regex = new RegExp(
        `^${pattern
          .split('*')
          .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      );
      const glob = new WildcardPattern(pattern);
      for (let i = 0; i < 30; i++) {
        const text = randomText(next, 'ab.', 9);
        assert.equal(glob.matches(text), regex.test(text), `${JSON.stringify(pattern)} vs ${JSON.stringify(text)}`);
      }
    }
  });

  it('origins: many wildcards and a huge Origin are answered, over the cap refused', () => {
    const policy = new OriginPolicy(['http://*a*a*a*a*a*.example']);
    assert.equal(policy.allows('http://xaaaaay.example'), true);
    // The regex `^http://.*a.*a.*a.*a.*a.*\.example$` backtracks polynomially on this; the glob scans it once.
    const hostile = `http://${'a'.repeat(MAX_ORIGIN_LENGTH - 20)}`;
    assert.equal(policy.allows(hostile), false);
    assert.equal(policy.allows(`http://${'a'.repeat(MAX_ORIGIN_LENGTH)}.example`), false);
    assert.equal(new OriginPolicy(['*']).allows('x'.repeat(MAX_ORIGIN_LENGTH + 1)), true);
  });

  it('hosts: parsed without a regex; over the cap refused on a loopback bind', () => {
    assert.equal(hostOfHeader('[::1]:11434'), '::1');
    assert.equal(hostOfHeader('[::1]'), '::1');
    assert.equal(hostOfHeader('[::1]:x'), '[::1]:x');
    assert.equal(hostOfHeader('Localhost:11434'), 'localhost');
    assert.equal(hostOfHeader('::1'), '::1');
    const policy = new HostPolicy(() => '127.0.0.1');
    assert.equal(policy.allows('localhost:11434'), true);
    assert.equal(policy.allows('[::ffff:127.0.0.1]:1'), true);
    assert.equal(policy.allows(`${'a'.repeat(MAX_HOST_LENGTH)}.localhost`), false);
    assert.equal(policy.allows(`[${':'.repeat(MAX_HOST_LENGTH - 2)}]`), false);
  });

  it('request ids: visible ASCII up to the cap kept, anything else replaced', () => {
    assert.equal(requestIdFrom('abc-1'), 'abc-1');
    assert.notEqual(requestIdFrom('a b'), 'a b');
    assert.notEqual(requestIdFrom(''), '');
    assert.notEqual(requestIdFrom('é'), 'é');
    const long = 'x'.repeat(201);
    assert.notEqual(requestIdFrom(long), long);
    assert.equal(requestIdFrom(['first', 'second']), 'first');
  });
});
