// Every member declared in binding.d.ts exists on the real addon (catches drift between native Init() and the .d.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { NativeBinding, NativeContext, NativeModel } from '../../binding';
import { REPO_ROOT } from '../../src/config';
import { LLAMAD_ADDON_ABI } from '../../src/native/addon-identity';
import { binding } from './native-helpers';

// Written out by hand from binding.d.ts: adding a member there without adding it here (and natively) fails review.
const BINDING_FUNCTIONS: (keyof NativeBinding)[] = [
  'systemInfo',
  'devices',
  'setLogger',
  'quantize',
  'jsonSchemaToGrammar',
];
const MODEL_METHODS: (keyof NativeModel)[] = [
  'load',
  'abortLoad',
  'info',
  'metadata',
  'chatTemplate',
  'applyChatTemplate',
  'renderChat',
  'chatCapabilities',
  'tokenize',
  'detokenize',
  'tokenizeAsync',
  'detokenizeAsync',
  'applyChatTemplateAsync',
  'renderChatAsync',
  'dispose',
];
const MODEL_ACCESSORS: (keyof NativeModel)[] = ['loaded'];
const CONTEXT_METHODS: (keyof NativeContext)[] = ['submit', 'cancel', 'stats', 'embed', 'dispose'];

describe('binding shape', () => {
  it('exports exactly the declared constructors and functions', () => {
    assert.equal(typeof binding.Model, 'function');
    assert.equal(typeof binding.Context, 'function');
    for (const name of BINDING_FUNCTIONS) assert.equal(typeof binding[name], 'function', name);
    assert.deepEqual(Object.keys(binding).sort(), ['Context', 'Model', ...BINDING_FUNCTIONS, 'abi', 'version'].sort());
  });

  it('reports the package.json version it was built from and the ABI of this TypeScript', () => {
    const ours = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(binding.version, ours);
    assert.equal(binding.abi, LLAMAD_ADDON_ABI);
  });

  it('Model has every declared method and accessor', () => {
    const proto = binding.Model.prototype as Record<string, unknown>;
    for (const name of MODEL_METHODS) assert.equal(typeof proto[name], 'function', `Model.${name}`);
    for (const name of MODEL_ACCESSORS) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      assert.ok(descriptor?.get, `Model.${name} getter`);
    }
  });

  it('Context has every declared method, and the static create', () => {
    const proto = binding.Context.prototype as Record<string, unknown>;
    for (const name of CONTEXT_METHODS) assert.equal(typeof proto[name], 'function', `Context.${name}`);
    assert.equal(typeof binding.Context.create, 'function', 'Context.create');
  });

  it('free functions answer', () => {
    assert.match(binding.systemInfo(), /CPU/);
    const devices = binding.devices();
    assert.ok(Array.isArray(devices) && devices.length > 0);
    assert.ok(devices.every((d) => typeof d === 'string'));
    assert.ok(
      devices.some((d) => /cpu/i.test(d)),
      devices.join(','),
    );
  });

  it('constructors validate their arguments with coded errors', () => {
    assert.throws(
      () => new binding.Model(42 as unknown as string),
      (e: unknown) => (e as { code?: string }).code === 'LLAMA_INVALID_ARGUMENT',
    );
    assert.throws(
      () => new binding.Context({} as NativeModel, { nCtx: 128 }),
      (e: unknown) => (e as { code?: string }).code === 'LLAMA_INVALID_ARGUMENT',
    );
  });
});
