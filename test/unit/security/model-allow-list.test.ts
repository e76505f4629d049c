import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policyNames } from '../../../src/models/model-access';
import { ModelName } from '../../../src/models/model-name';
import { allowsModel, limitsModels, matchesGlob } from '../../../src/security';
import type { TenantPolicy } from '../../../src/security';

/** Whether `policy` allows the model `input` names (parsed as a request's name is). */
function allows(policy: TenantPolicy | undefined, input: string): boolean {
  const name = ModelName.parse(input);
  assert.ok(name, input);
  return allowsModel(policy, policyNames(name));
}

describe('model allow-lists: globs over model names', () => {
  it('matchesGlob: `*` any run (across `/` and `:`), `?` one character, the rest literal, case-insensitive', () => {
    const yes: Array<[string, string]> = [
      ['demo', 'demo'],
      ['DEMO', 'demo'],
      ['*', ''],
      ['*', 'hf.co/org/x:latest'],
      ['llama3*', 'llama3:latest'],
      ['llama3*', 'llama3.2:1b'],
      ['hf.co/*', 'hf.co/org/x:q4'],
      ['*:1b', 'llama3.2:1b'],
      ['qwen?', 'qwen3'],
      ['a*b*c', 'aXbYbZc'],
      ['**x', 'x'],
    ];
    const no: Array<[string, string]> = [
      ['demo', 'demo2'],
      ['demo', 'de'],
      ['llama3*', 'llama2:latest'],
      ['qwen?', 'qwen'],
      ['qwen?', 'qwen33'],
      ['hf.co/*', 'hf.com/org/x'],
      ['a.c', 'abc'],
      ['a*b*c', 'aXbYbZ'],
    ];
    for (const [pattern, text] of yes) assert.equal(matchesGlob(pattern, text), true, `${pattern} ~ ${text}`);
    for (const [pattern, text] of no) assert.equal(matchesGlob(pattern, text), false, `${pattern} !~ ${text}`);
    // No blow-up on a pathological pattern (single-star backtracking is linear per star).
    assert.equal(matchesGlob(`${'*a'.repeat(50)}b`, 'a'.repeat(5000)), false);
  });

  it('matches the display name, with and without an implied :latest, and the full name', () => {
    const user: TenantPolicy = { role: 'user', models: ['demo', 'llama3*', 'hf.co/org/*', 'library/qwen:*'] };
    assert.deepEqual(policyNames(ModelName.parse('Demo')!), [
      'Demo:latest',
      'Demo',
      'registry.ollama.ai/library/Demo:latest',
    ]);
    for (const input of ['demo', 'demo:latest', 'DEMO', 'library/demo', 'llama3', 'llama3.2:1b', 'hf.co/org/x:q4']) {
      assert.equal(allows(user, input), true, input);
    }
    for (const input of ['demo:v2', 'demo2', 'mistral', 'hf.co/other/x', 'qwen:7b', 'me/demo']) {
      assert.equal(allows(user, input), false, input);
    }
    assert.equal(allows({ role: 'user', models: ['*/library/qwen:*'] }, 'qwen:7b'), true, 'the full name');
  });

  it('only a `user` with a list is limited: no policy, an admin, or no list see every model', () => {
    for (const policy of [undefined, {}, { role: 'admin' as const, models: [] }, { role: 'user' as const }]) {
      assert.equal(limitsModels(policy), false);
      assert.equal(allows(policy, 'anything'), true);
    }
    assert.equal(limitsModels({ role: 'user', models: [] }), true);
    assert.equal(allows({ role: 'user', models: [] }, 'demo'), false, 'an empty list allows nothing');
  });
});
