import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { JSON_OBJECT_GRAMMAR, MAX_GRAMMAR_BYTES, MAX_SCHEMA_BYTES } from '../../../../src/generation/prompt/format';
import { formatGrammar, GrammarBudget } from '../../../../src/generation/prompt/grammar-budget';
import type { Runner } from '../../../../src/runner/runner';

/** A runner whose converter records its calls and returns a grammar of `size` characters (or throws `fail`). */
function converter(size = 10, fail?: Error) {
  const calls: string[] = [];
  const runner = {
    jsonSchemaToGrammar: async (schema: string) => {
      await Promise.resolve();
      calls.push(schema);
      if (fail) throw fail;
      return 'x'.repeat(size);
    },
  } as unknown as Runner;
  return { calls, runner };
}

/** A schema whose JSON text is longer than `bytes`: one enum of that many short values. */
const enumSchema = (values: number) => ({
  type: 'object',
  properties: { x: { enum: Array.from({ length: values }, (_, i) => `value${i}`) } },
});

/** formatGrammar with the budget of a request that has only this format. */
function grammarOf(schema: Record<string, unknown>, runner: Runner): Promise<string> {
  const format = { kind: 'schema' as const, schema };
  return formatGrammar(format, GrammarBudget.of(format, undefined), runner);
}

describe('format grammars and their limits (issue 23 §4)', () => {
  it('passes "json" and a small schema through', async () => {
    const json = converter();
    assert.equal(
      await formatGrammar({ kind: 'json' }, GrammarBudget.of({ kind: 'json' }, undefined), json.runner),
      JSON_OBJECT_GRAMMAR,
    );
    assert.equal(json.calls.length, 0);
    const c = converter();
    assert.equal(await grammarOf(enumSchema(3), c.runner), 'x'.repeat(10));
    assert.equal(c.calls.length, 1);
  });

  it('refuses a schema over the size limit before converting it, naming the limit', async () => {
    const c = converter();
    await assert.rejects(
      grammarOf(enumSchema(7_000), c.runner),
      (e: unknown) =>
        e instanceof InvalidRequestError &&
        e.message.startsWith('format: the JSON schema is ') &&
        e.message.endsWith(`more than the limit of ${MAX_SCHEMA_BYTES} bytes`),
    );
    assert.equal(c.calls.length, 0, 'never converted');
  });

  it('refuses a grammar over the grammar limit, and keeps the conversion error text', async () => {
    await assert.rejects(
      grammarOf(enumSchema(3), converter(MAX_GRAMMAR_BYTES + 1).runner),
      /format: the JSON schema makes a grammar of 262145 bytes, more than the limit of 262144 bytes/,
    );
    await assert.rejects(
      grammarOf(enumSchema(3), converter(10, new Error('bad schema')).runner),
      (e: unknown) => e instanceof InvalidRequestError && e.message === 'invalid JSON schema in format: bad schema',
    );
  });
});
