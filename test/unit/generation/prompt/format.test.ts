import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import {
  boundedToGrammar,
  formatGrammar,
  JSON_OBJECT_GRAMMAR,
  MAX_GRAMMAR_BYTES,
  MAX_SCHEMA_BYTES,
} from '../../../../src/generation/prompt/format';

/** A converter that records its calls and returns a grammar of `size` characters. */
function converter(size = 10) {
  const calls: string[] = [];
  return { calls, toGrammar: (schema: string) => (calls.push(schema), 'x'.repeat(size)) };
}

/** A schema whose JSON text is longer than `bytes`: one enum of that many short values. */
const enumSchema = (values: number) => ({
  type: 'object',
  properties: { x: { enum: Array.from({ length: values }, (_, i) => `value${i}`) } },
});

describe('format grammars and their limits (issue 23 §4)', () => {
  it('passes "json" and a small schema through', () => {
    assert.equal(formatGrammar({ kind: 'json' }, converter().toGrammar), JSON_OBJECT_GRAMMAR);
    const c = converter();
    assert.equal(formatGrammar({ kind: 'schema', schema: enumSchema(3) }, c.toGrammar), 'x'.repeat(10));
    assert.equal(c.calls.length, 1);
  });

  it('refuses a schema over the size limit before converting it, naming the limit', () => {
    const c = converter();
    assert.throws(
      () => formatGrammar({ kind: 'schema', schema: enumSchema(50_000) }, c.toGrammar),
      (e: unknown) =>
        e instanceof InvalidRequestError &&
        e.message.startsWith('format: the JSON schema is ') &&
        e.message.endsWith(`more than the limit of ${MAX_SCHEMA_BYTES} bytes`),
    );
    assert.equal(c.calls.length, 0, 'never converted');
  });

  it('refuses a grammar over the grammar limit, and keeps the conversion error text', () => {
    assert.throws(
      () => formatGrammar({ kind: 'schema', schema: enumSchema(3) }, converter(MAX_GRAMMAR_BYTES + 1).toGrammar),
      /format: the JSON schema makes a grammar of 262145 bytes, more than the limit of 262144 bytes/,
    );
    assert.throws(
      () =>
        formatGrammar({ kind: 'schema', schema: enumSchema(3) }, () => {
          throw new Error('bad schema');
        }),
      /^InvalidRequestError: invalid JSON schema in format: bad schema$|invalid JSON schema in format: bad schema/,
    );
  });

  it('bounds the tool schemas of a forced tool call the same way', () => {
    const bounded = boundedToGrammar(converter().toGrammar, 'tools');
    assert.equal(bounded('{}'), 'x'.repeat(10));
    assert.throws(() => bounded('x'.repeat(MAX_SCHEMA_BYTES + 1)), /^.*tools: the JSON schema is 65537 bytes/);
  });
});
