// The grammar constraint's candidate masks (native/grammar_constraint.cpp: the vocabulary decoded once per model)
// against llama.cpp's own llama_grammar_apply_impl, token by token: with LLAMAD_GRAMMAR_CHECK=1 every mask is computed
// both ways and a difference ends the task with LLAMA_INTERNAL. Seeded sampling at a high temperature walks the
// grammars through many states; the SPM vocabulary's byte tokens and qwen2's byte-level BPE produce pieces that end
// inside a UTF-8 character (the fallback to llama.cpp's decoding).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { gbnfLiteral } from '../../src/templates/gbnf';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { GREEDY, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();
process.env.LLAMAD_GRAMMAR_CHECK = '1'; // read by each task's grammar when it is created

const SCHEMA = JSON.stringify({
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    size: { type: 'number' },
    kind: { enum: ['a', 'bé', '日本'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 3 },
  },
  required: ['name', 'size', 'kind', 'tags'],
});

/** Grammars over several element kinds: char ranges with multibyte ends, negated classes, any char, token ids. */
function grammars(model: NativeModel): { label: string; gbnf: string; check: (text: string) => void }[] {
  const [a, b] = Array.from(model.tokenize(' hello world', false, false)).slice(0, 2);
  return [
    {
      label: 'JSON Schema with multibyte enum values',
      gbnf: binding.jsonSchemaToGrammar(SCHEMA),
      check: (text) => {
        const value = JSON.parse(text) as Record<string, unknown>;
        assert.deepEqual(Object.keys(value).sort(), ['kind', 'name', 'size', 'tags']);
        assert.ok(['a', 'bé', '日本'].includes(value.kind as string), text);
      },
    },
    {
      label: 'multibyte ranges and literals',
      gbnf: 'root ::= ([α-ω] | "日本語" | [à-ÿ] | "x")+ "."',
      check: (text) => assert.match(text, /^(?:[α-ω]|日本語|[à-ÿ]|x)+\.$/u),
    },
    {
      label: 'negated classes and any character',
      gbnf: 'root ::= [^a-z\\n]{2,6} . [^"]{1,4} "!"',
      check: (text) => assert.match(text, /^[^a-z\n]{2,6}.[^"]{1,4}!$/su),
    },
    {
      label: 'token ids and a negated token',
      gbnf: `root ::= <[${a}]> !<[${b}]> <[${a}]> [a-z]{1,3}`,
      check: (text) => assert.ok(text.length > 0),
    },
  ];
}

for (const [label, file] of [
  ['SPM llama (byte tokens)', TINY_LLAMA_SPM],
  ['qwen2 (byte-level BPE, 152k tokens)', TINY_QWEN2],
] as const) {
  describe(`grammar masks equal llama.cpp's on the ${label}`, () => {
    let model: NativeModel;
    let ctx: NativeContext;
    let prompt: Int32Array;

    before(async () => {
      model = await loadModel(file);
      ctx = new binding.Context(model, { nCtx: 1024, nParallel: 2, nThreads: 2 });
      prompt = model.tokenize('Write:', false, false);
    });
    after(async () => {
      await ctx.dispose();
      await model.dispose();
    });

    for (const seedBase of [0, 100]) {
      it(`greedy and seeded samples of every grammar (seeds ${seedBase}+)`, async () => {
        for (const g of grammars(model)) {
          const samplings = [GREEDY, seeded(seedBase + 1, 1.5), seeded(seedBase + 2, 2.5), seeded(seedBase + 3, 4)];
          for (const s of samplings) {
            const r = await runTask(ctx, { tokens: prompt, nPredict: 96, sampling: { ...s, grammar: g.gbnf } });
            if (r.done.reason === 'eog') g.check(r.text);
          }
        }
      });
    }

    it('a lazy grammar, before and after its trigger word', async () => {
      // The trigger is the first word the free run writes; from it on the grammar gets the text (llama.cpp replays the
      // buffered output from the match), so the grammar starts with that word, then digits and a full stop.
      const free = await runTask(ctx, { tokens: prompt, nPredict: 1, sampling: seeded(7, 1.5) });
      const word = free.text.trim();
      assert.ok(word.length > 0, JSON.stringify(free.text));
      const r = await runTask(ctx, {
        tokens: prompt,
        nPredict: 48,
        sampling: {
          ...seeded(7, 1.5),
          grammar: `root ::= ${gbnfLiteral(word)} [0-9]+ "."`,
          grammarLazy: true,
          grammarTriggers: [{ type: 'word', value: word }],
        },
      });
      if (r.done.reason === 'eog') assert.match(r.text, /[0-9]+\.$/);
    });
  });
}
