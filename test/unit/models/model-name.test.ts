import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelName } from '../../../src/models/model-name';

describe('ModelName.parse', () => {
  it('merges the defaults host, namespace and tag', () => {
    const n = ModelName.parse('llama3.2');
    assert.ok(n);
    assert.deepEqual(n.manifestSegments(), ['registry.ollama.ai', 'library', 'llama3.2', 'latest']);
  });

  it('splits host/namespace/model:tag from the right', () => {
    const n = ModelName.parse('hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M');
    assert.ok(n);
    assert.equal(n.host, 'hf.co');
    assert.equal(n.namespace, 'bartowski');
    assert.equal(n.model, 'Llama-3.2-1B-Instruct-GGUF');
    assert.equal(n.tag, 'Q4_K_M');
  });

  it('keeps a host port and drops a scheme', () => {
    const n = ModelName.parse('https://localhost:5000/me/model:v1');
    assert.ok(n);
    assert.equal(n.host, 'localhost:5000');
    assert.equal(n.namespace, 'me');
    assert.equal(n.tag, 'v1');
  });

  it('treats a colon before the last slash as part of the host, not a tag', () => {
    const n = ModelName.parse('localhost:5000/ns/model');
    assert.ok(n);
    assert.equal(n.host, 'localhost:5000');
    assert.equal(n.tag, 'latest');
  });

  const invalid: Array<[string, string]> = [
    ['', 'empty'],
    ['model:', 'empty tag'],
    ['ns//model', 'empty namespace'],
    ['ns/', 'empty model'],
    ['a/b/c/d', 'too many slashes (host with a slash)'],
    ['ns.x/model', 'dot in namespace'],
    ['-model', 'bad first character'],
    ['model:-tag', 'bad first tag character'],
    ['mo del', 'space'],
    ['m'.repeat(81), 'model longer than 80'],
    [`m:${'t'.repeat(81)}`, 'tag longer than 80'],
  ];
  for (const [input, why] of invalid) {
    it(`rejects ${JSON.stringify(input.slice(0, 20))} (${why})`, () => {
      assert.equal(ModelName.parse(input), null);
    });
  }

  it('reads a leading slash as an absent namespace, like Go', () => {
    assert.equal(ModelName.parse('/model')?.toShortString(), 'model:latest');
  });

  it('accepts 80-character parts', () => {
    assert.ok(ModelName.parse(`${'n'.repeat(80)}/${'m'.repeat(80)}:${'t'.repeat(80)}`));
  });
});

describe('ModelName display forms', () => {
  const cases: Array<[string, string]> = [
    ['llama3.2', 'llama3.2:latest'],
    ['library/llama3.2:1b', 'llama3.2:1b'],
    ['registry.ollama.ai/library/x:y', 'x:y'],
    ['user/m', 'user/m:latest'],
    ['registry.ollama.ai/user/m:t', 'user/m:t'],
    ['hf.co/user/repo:Q4_K_M', 'hf.co/user/repo:Q4_K_M'],
    ['REGISTRY.OLLAMA.AI/LIBRARY/Mixed:Case', 'Mixed:Case'],
  ];
  for (const [input, short] of cases) {
    it(`${input} → ${short}`, () => assert.equal(ModelName.parse(input)?.toShortString(), short));
  }

  it('full form names every part', () => {
    assert.equal(ModelName.parse('x')?.toFullString(), 'registry.ollama.ai/library/x:latest');
  });

  it('compares case-insensitively', () => {
    const a = ModelName.parse('Llama3.2:Latest');
    const b = ModelName.parse('llama3.2');
    assert.ok(a && b && a.equalsIgnoreCase(b));
  });
});
