import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isKeysDocument, KeysFileError, readKeysFile } from '../../../src/security';

/** The message of the KeysFileError that reading `text` raises (fails the test when it reads). */
function refusal(text: string): string {
  try {
    readKeysFile(text);
  } catch (err) {
    assert.ok(err instanceof KeysFileError, String(err));
    return err.message;
  }
  assert.fail('the file was accepted');
}

const ISSUE_EXAMPLE = {
  keys: [
    {
      key: 'sk-team-a',
      name: 'team-a',
      role: 'user',
      models: ['llama3*', 'demo'],
      limits: {
        requests_per_minute: 60,
        tokens_per_minute: 20000,
        tokens_per_day: 1000000,
        concurrent_requests: 4,
        max_output_tokens: 2048,
        max_context: 8192,
        weight: 1,
      },
    },
  ],
};

describe('keys file: key lines or a YAML/JSON policy document', () => {
  it('key lines stay key lines (a single key, comments, CRLF), without policies', () => {
    assert.deepEqual(readKeysFile('sk-only'), [{ key: 'sk-only' }]);
    assert.deepEqual(readKeysFile('# c\r\n k1 \r\n\r\nk2\n'), [{ key: 'k1' }, { key: 'k2' }]);
    assert.deepEqual(readKeysFile(''), []);
    for (const lines of ['sk-only', 'keys-abc', 'keysk', '# keys:\nk1', 'sk-{a}']) {
      assert.equal(isKeysDocument(lines), false, lines);
    }
  });

  it('recognizes a document by its first line: `{`, `---`, `%`, or a `keys:` mapping key', () => {
    for (const doc of [
      '{"keys": []}',
      '---\nkeys: []',
      '%YAML 1.2\n---\nkeys: []',
      '# tenants\n\nkeys:\n',
      'keys: []',
    ]) {
      assert.equal(isKeysDocument(doc), true, doc);
    }
  });

  it('reads the issue’s JSON example, and the same in YAML, to the same policy', () => {
    const { name, role, models, limits } = ISSUE_EXAMPLE.keys[0];
    const expected = [{ key: 'sk-team-a', policy: { name, role, models, limits } }];
    assert.deepEqual(readKeysFile(JSON.stringify(ISSUE_EXAMPLE)), expected);
    const yaml = [
      '# tenants',
      'keys:',
      '  - key: sk-team-a',
      '    name: team-a',
      '    role: user',
      '    models: ["llama3*", demo]',
      '    limits:',
      '      requests_per_minute: 60',
      '      tokens_per_minute: 20000',
      '      tokens_per_day: 1000000',
      '      concurrent_requests: 4',
      '      max_output_tokens: 2048',
      '      max_context: 8192',
      '      weight: 1',
      '  - key: "12345"',
      '',
    ].join('\n');
    const entries = readKeysFile(yaml);
    assert.deepEqual(entries[0], expected[0]);
    assert.deepEqual(entries[1], { key: '12345', policy: {} }, 'every field but `key` is optional');
  });

  it('refuses a syntax error with its line and column, never quoting the file', () => {
    const message = refusal('keys:\n  - key: sk-secret-1\n    limits: {weight: 1\n  - key: sk-secret-2\n');
    assert.match(message, /^syntax error at line \d+, column \d+/);
    assert.doesNotMatch(message, /sk-secret/);
    assert.match(refusal('{"keys": [{"key": "sk-a", "key": "sk-b"}]}'), /line 1.*unique/);
  });

  it('refuses unknown fields, naming them (a key-like name only by its length)', () => {
    assert.match(refusal('keys:\n  - key: a\n    rol: user\n    model: [x]\n'), /keys\[0\] \(line 2\).*`rol`, `model`/);
    assert.match(refusal('{"keys": [{"key": "a", "limits": {"rpm": 1}}]}'), /unknown field `limits\.rpm`/);
    assert.match(refusal('{"keys": [], "tenants": []}'), /unknown field `tenants`/);
    const leaked = refusal('keys:\n  - key: a\n    sk-0123456789abcdef: 1\n');
    assert.doesNotMatch(leaked, /sk-0123/);
    assert.match(leaked, /<19 characters>/);
  });

  it('validates every field, naming the entry, its line and the field', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ keys: 'k' }, /`keys` must be a list/],
      [{ keys: null }, /`keys` must be a list/],
      [{ keys: ['k'] }, /keys\[0\].*must be a mapping/],
      [{ keys: [{ name: 'x' }] }, /keys\[0\].*`key` must be a string/],
      [{ keys: [{ key: 42 }] }, /`key` must be a string/],
      [{ keys: [{ key: '  ' }] }, /`key` must not be empty/],
      [{ keys: [{ key: 'a', role: 'root' }] }, /`role` must be "admin" or "user"/],
      [{ keys: [{ key: 'a', name: '' }] }, /`name` must be a non-empty string/],
      [{ keys: [{ key: 'a', role: 'user', models: 'demo' }] }, /`models` must be a list/],
      [{ keys: [{ key: 'a', role: 'user', models: ['demo', 3] }] }, /`models` must be a list/],
      [{ keys: [{ key: 'a', models: ['demo'] }] }, /`models` limits a `user` key only/],
      [{ keys: [{ key: 'a', role: 'admin', models: ['demo'] }] }, /`models` limits a `user` key only/],
      [{ keys: [{ key: 'a', limits: [] }] }, /`limits` must be a mapping/],
      [{ keys: [{ key: 'a', limits: { requests_per_minute: 0 } }] }, /`limits.requests_per_minute` must be a positive/],
      [{ keys: [{ key: 'a', limits: { tokens_per_day: 1.5 } }] }, /`limits.tokens_per_day` must be a positive integer/],
      [{ keys: [{ key: 'a', limits: { max_context: '8k' } }] }, /`limits.max_context` must be a positive integer/],
      [{ keys: [{ key: 'a', limits: { weight: 0 } }] }, /`limits.weight` must be a positive number/],
      [{ keys: [{ key: 'a' }, { key: 'b' }, { key: 'a' }] }, /keys\[2\].*the same key as keys\[0\]/],
    ];
    for (const [doc, pattern] of cases) assert.match(refusal(JSON.stringify(doc)), pattern, JSON.stringify(doc));
    assert.match(refusal('keys:\n  - key: a\n  - key: b\n    role: boss\n'), /keys\[1\] \(line 3\): `role`/);
    assert.deepEqual(readKeysFile('{"keys": [{"key": "a", "limits": {"weight": 0.5}}]}')[0].policy, {
      limits: { weight: 0.5 },
    });
  });
});
