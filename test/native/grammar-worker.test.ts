// The grammar worker (src/runner/grammar-worker.ts): json_schema_to_grammar of the real addon in a worker thread,
// the same grammar as on the JS thread, errors as domain errors, and the JS thread free while it converts.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidRequestError, RequestCancelledError } from '../../src/common/errors';
import { addonFileOf, GrammarWorker, grammarConverter } from '../../src/runner/grammar-worker';
import { realAddon } from '../utils/real-addon';

const { binding, skip } = realAddon();

/** A schema of about `bytes` of JSON text: an object of many string properties with a pattern each. */
function bigSchema(bytes: number): string {
  const properties: Record<string, unknown> = {};
  for (let i = 0, size = 0; size < bytes; i++) {
    const value = { type: 'string', pattern: `^[a-z]{${i % 7},${(i % 7) + 3}}$` };
    properties[`field_${i}`] = value;
    size += JSON.stringify(value).length + 12;
  }
  return JSON.stringify({ type: 'object', properties, required: Object.keys(properties) });
}

describe('GrammarWorker (real addon)', { skip }, () => {
  const file = binding ? addonFileOf(binding) : undefined;
  const worker = new GrammarWorker(file ?? '');
  after(() => worker.close());

  it('finds the addon file of the loaded binding, and none for a stand-in', () => {
    assert.ok(file?.endsWith('.node'), String(file));
    assert.equal(addonFileOf({ jsonSchemaToGrammar: () => '' }), undefined);
  });

  it('converts like the addon on the JS thread, one job after the other', async () => {
    const schemas = [
      JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }),
      JSON.stringify({ type: 'array', items: { enum: ['x', 'y'] } }),
    ];
    const grammars = await Promise.all(schemas.map((s) => worker.convert(s)));
    assert.deepEqual(
      grammars,
      schemas.map((s) => binding!.jsonSchemaToGrammar(s)),
    );
  });

  it('rejects a schema llama.cpp cannot convert with InvalidRequestError, and keeps working', async () => {
    await assert.rejects(worker.convert('{not json'), InvalidRequestError);
    assert.match(await worker.convert('{"type":"string"}'), /root ::=/);
  });

  it('drops a job whose signal fired while it waited', async () => {
    const abort = new AbortController();
    const first = worker.convert(bigSchema(30_000));
    const second = worker.convert('{"type":"string"}', abort.signal);
    abort.abort();
    await assert.rejects(second, RequestCancelledError);
    assert.match(await first, /root ::=/);
  });

  it('leaves the JS thread free while a large schema converts', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const schema = bigSchema(60_000);
    await worker.convert(schema);
    clearInterval(timer);
    assert.ok(ticks > 5, `timers ran during the conversion (${ticks} ticks)`);
  });

  it('grammarConverter uses the worker for the compiled addon', async () => {
    const convert = grammarConverter(binding!);
    assert.equal(await convert('{"type":"boolean"}'), binding!.jsonSchemaToGrammar('{"type":"boolean"}'));
  });
});
