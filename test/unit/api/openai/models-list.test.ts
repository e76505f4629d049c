import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromResolvedModel, toOpenAIModelList } from '../../../../src/api/openai/openai-response.mapper';
import { EMPTY_DETAILS, type ListedModel, MediaType, type ResolvedModel } from '../../../../src/models';

const listed = (name: string, modified: number, weightsDigest: string, adapterDigests: string[] = []): ListedModel => ({
  name,
  modifiedAt: new Date(modified * 1000),
  size: 1,
  digest: `manifest-of-${name}`,
  details: { ...EMPTY_DETAILS },
  weightsDigest,
  adapterDigests,
});

describe('/v1/models with LoRA adapters (vLLM style)', () => {
  const models = [
    listed('ft2:latest', 50, 'sha256:w', ['sha256:l2']),
    listed('tiny-base:latest', 40, 'sha256:w'),
    listed('ft1:latest', 30, 'sha256:w', ['sha256:l1']),
    listed('tiny:latest', 20, 'sha256:w'),
    listed('orphan:latest', 10, 'sha256:x', ['sha256:l9']),
    listed('hf.co/org/m:q4', 5, 'sha256:y'),
  ];

  it('gives adapter models parent (the newest adapter-less model over the same weights) and root', () => {
    assert.deepEqual(toOpenAIModelList(models), [
      {
        id: 'ft2:latest',
        object: 'model',
        created: 50,
        owned_by: 'library',
        root: 'sha256:l2',
        parent: 'tiny-base:latest',
      },
      { id: 'tiny-base:latest', object: 'model', created: 40, owned_by: 'library' },
      {
        id: 'ft1:latest',
        object: 'model',
        created: 30,
        owned_by: 'library',
        root: 'sha256:l1',
        parent: 'tiny-base:latest',
      },
      { id: 'tiny:latest', object: 'model', created: 20, owned_by: 'library' },
      { id: 'orphan:latest', object: 'model', created: 10, owned_by: 'library', root: 'sha256:l9' },
      { id: 'hf.co/org/m:q4', object: 'model', created: 5, owned_by: 'org' },
    ]);
  });

  it('a base model hidden from the caller (not listed) is never named as parent', () => {
    const visible = models.filter((m) => m.name !== 'tiny-base:latest');
    assert.equal(toOpenAIModelList(visible)[0].parent, 'tiny:latest');
    const noBase = models.filter((m) => !m.name.startsWith('tiny'));
    assert.equal(toOpenAIModelList(noBase)[0].parent, undefined);
    assert.equal('parent' in toOpenAIModelList(noBase)[0], false);
  });

  it('GET /v1/models/{model} gives the same fields, with the id as requested', () => {
    const resolved = {
      name: { namespace: 'library' },
      modifiedAt: new Date(30_000),
      modelDigest: 'sha256:w',
      manifest: {
        layers: [
          { mediaType: MediaType.MODEL, digest: 'sha256:w' },
          { mediaType: MediaType.ADAPTER, digest: 'sha256:l1' },
        ],
      },
    } as unknown as ResolvedModel;
    assert.deepEqual(fromResolvedModel('ft1', resolved, models), {
      id: 'ft1',
      object: 'model',
      created: 30,
      owned_by: 'library',
      root: 'sha256:l1',
      parent: 'tiny-base:latest',
    });
    const base = { ...resolved, manifest: { layers: resolved.manifest.layers.slice(0, 1) } } as ResolvedModel;
    assert.deepEqual(fromResolvedModel('tiny', base), {
      id: 'tiny',
      object: 'model',
      created: 30,
      owned_by: 'library',
    });
  });
});
