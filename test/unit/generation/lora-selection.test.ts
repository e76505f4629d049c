import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import { defaultLoras, resolveLoras } from '../../../src/generation/lora-selection';
import type { ResolvedModel } from '../../../src/models';
import { fakeResolvedModel } from '../../utils/resolved-model';

/** A model over `weights` with these adapter blobs. */
const model = (shortName: string, modelPath: string, adapterPaths: string[] = []): ResolvedModel =>
  fakeResolvedModel({ shortName, modelPath, adapterPaths });

const base = model('base:latest', '/b/weights');
const ft1 = model('ft1:latest', '/b/weights', ['/b/lora1']);
const ft2 = model('ft2:latest', '/b/weights', ['/b/lora2']);
const two = model('two:latest', '/b/weights', ['/b/lora1', '/b/lora3']);
const other = model('other:latest', '/b/other-weights', ['/b/lora9']);
const catalog = new Map([base, ft1, ft2, two, other].map((m) => [m.shortName.replace(/:latest$/, ''), m]));

/** Resolves a name from the catalog; unknown names fail as ModelsService.resolve does. */
const resolveName = (name: string): Promise<ResolvedModel> => {
  const found = catalog.get(name);
  return found ? Promise.resolve(found) : Promise.reject(new ModelNotFoundError(name));
};

describe('resolveLoras', () => {
  it('without a lora list applies the model’s own adapters at scale 1 under its name', async () => {
    assert.deepEqual(await resolveLoras(two, undefined, resolveName), [
      { path: '/b/lora1', scale: 1, name: 'two:latest' },
      { path: '/b/lora3', scale: 1, name: 'two:latest' },
    ]);
    assert.deepEqual(defaultLoras(base), []);
  });

  it('a list replaces the model’s set: ids index its adapters, unlisted ones are left out', async () => {
    assert.deepEqual(await resolveLoras(two, [{ id: 1, scale: 0.5 }], resolveName), [
      { path: '/b/lora3', scale: 0.5, name: 'two:latest' },
    ]);
    assert.deepEqual(await resolveLoras(ft1, [], resolveName), [], 'an empty list = the base weights');
  });

  it('drops entries with scale 0 (not applied)', async () => {
    assert.deepEqual(await resolveLoras(ft1, [{ id: 0, scale: 0 }], resolveName), []);
  });

  it('a name applies that model’s adapters with the given scale, reported under its name', async () => {
    assert.deepEqual(await resolveLoras(base, [{ name: 'ft2', scale: 1 }], resolveName), [
      { path: '/b/lora2', scale: 1, name: 'ft2:latest' },
    ]);
    assert.deepEqual(
      await resolveLoras(
        ft1,
        [
          { name: 'ft2', scale: -0.25 },
          { id: 0, scale: 2 },
        ],
        resolveName,
      ),
      [
        { path: '/b/lora2', scale: -0.25, name: 'ft2:latest' },
        { path: '/b/lora1', scale: 2, name: 'ft1:latest' },
      ],
    );
  });

  it('rejects an id out of range, naming it and the model’s adapter count', async () => {
    await assert.rejects(
      resolveLoras(ft1, [{ id: 1, scale: 1 }], resolveName),
      (err: unknown) =>
        err instanceof InvalidRequestError &&
        err.message === 'lora id 1 is out of range: ft1:latest has 1 adapter (ids 0..0)',
    );
    await assert.rejects(
      resolveLoras(base, [{ id: 0, scale: 1 }], resolveName),
      (err: unknown) =>
        err instanceof InvalidRequestError && err.message === 'lora id 0 is out of range: base:latest has 0 adapters',
    );
  });

  it('rejects a name over other weights, or without adapters', async () => {
    await assert.rejects(
      resolveLoras(base, [{ name: 'other', scale: 1 }], resolveName),
      (err: unknown) =>
        err instanceof InvalidRequestError &&
        err.message === 'lora "other" is not an adapter of base:latest: other:latest has other base weights',
    );
    await assert.rejects(
      resolveLoras(ft1, [{ name: 'base', scale: 1 }], resolveName),
      (err: unknown) =>
        err instanceof InvalidRequestError &&
        err.message === 'lora "base" is not an adapter of ft1:latest: base:latest has no ADAPTER',
    );
  });

  it('an unknown name fails as the model resolver fails (model not found)', async () => {
    await assert.rejects(resolveLoras(base, [{ name: 'nope', scale: 1 }], resolveName), ModelNotFoundError);
  });

  it('rejects the same adapter named twice', async () => {
    await assert.rejects(
      resolveLoras(
        ft1,
        [
          { id: 0, scale: 1 },
          { name: 'two', scale: 1 },
        ],
        resolveName,
      ),
      (err: unknown) =>
        err instanceof InvalidRequestError &&
        err.message === 'lora "two" names an adapter that lora id 0 already names',
    );
  });
});
