import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import type { DaemonConfig } from '../../../src/config';
import { RequestContext, requestContextStorage } from '../../../src/observability/request-context';
import { cacheScopeKey } from '../../../src/security/cache-scope';
import { createInferenceTestbed, InferenceTestbed, tinyGenerateCommand } from '../../utils/inference-testbed';

const command = tinyGenerateCommand;

/** A request context as the authorization hook leaves it (principal set). */
function contextOf(principal: string): RequestContext {
  const context = new RequestContext('req-1', 'POST', '/api/generate');
  context.principal = principal;
  return context;
}

// LLAMAD_CACHE_SCOPE (docs/security.md "Cache scope"): the generation's task carries a hash of the request's
// principal as its cacheScope under `principal`, none under `global`.
describe('CompletionService: the cache scope of a generation', () => {
  let bed: InferenceTestbed;
  afterEach(() => bed.close());

  async function generateAs(config: Partial<DaemonConfig>, principal?: string): Promise<string | undefined> {
    bed = await createInferenceTestbed({ config: { contextLength: 256, ...config } });
    await bed.createModel('tiny');
    const run = () => lastValueFrom(bed.generate.generate(command()).pipe(toArray()));
    await (principal === undefined ? run() : requestContextStorage.run(contextOf(principal), run));
    assert.equal(bed.binding.submitted.length, 1);
    return bed.binding.submitted[0].cacheScope;
  }

  it('API keys set (LLAMAD_CACHE_SCOPE unset): the hash of the request principal, never its id', async () => {
    const scope = await generateAs({ apiKeys: ['k'] }, 'key:0123456789ab');
    assert.equal(scope, cacheScopeKey('principal', 'key:0123456789ab'));
    assert.ok(scope && !scope.includes('0123456789ab'));
  });

  it('principal mode outside an HTTP request: the anonymous principal', async () => {
    assert.equal(await generateAs({ cacheScope: 'principal' }), cacheScopeKey('principal', 'anonymous'));
  });

  it('no keys (LLAMAD_CACHE_SCOPE unset), or global with keys: no cacheScope (one shared scope, as Ollama)', async () => {
    assert.equal(await generateAs({}, 'anonymous'), undefined);
    await bed.close();
    assert.equal(await generateAs({ apiKeys: ['k'], cacheScope: 'global' }, 'key:0123456789ab'), undefined);
  });
});
