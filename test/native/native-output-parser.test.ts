// NativeOutputParser (incremental) against WholeTextNativeOutputParser (the whole-text oracle): identical deltas and
// final messages for answers streamed piece by piece, on every chat template vendored with llama.cpp.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeChatRequestMessage, NativeChatParser, NativeChatTool, NativeModel } from '../../binding';
import { answerTokens } from '../../bench/parser-cost';
import { REPO_ROOT } from '../../src/config';
import { NativeOutputParser, OutputParser, WholeTextNativeOutputParser } from '../../src/generation/output';
import { TINY_QWEN2, ensureTestModels } from '../utils/models';
import { loadModel } from './native-helpers';

ensureTestModels();

const TEMPLATES = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models', 'templates');
const tool = (name: string, properties: Record<string, unknown>): NativeChatTool => ({
  name,
  description: `The ${name} tool.`,
  parameters: JSON.stringify({ type: 'object', properties, required: Object.keys(properties) }),
});
const TOOLS = [
  tool('write_file', { path: { type: 'string' }, content: { type: 'string' } }),
  tool('get_weather', { city: { type: 'string' }, days: { type: 'integer' } }),
];
const USER: NativeChatRequestMessage = { role: 'user', content: 'Write my notes.' };
const BODY = '- item with "quotes", {braces}, <tags>, a \\ backslash and é ✓ 😀\n  next: </tool_call> [TOOL_CALLS]\n';
/** Assistant turns that the templates render into answers: text + thinking + call, two calls, text only. */
const TURNS: NativeChatRequestMessage[] = [
  {
    role: 'assistant',
    content: 'I will write the notes now. Done <b>bold</b>.',
    reasoningContent: 'The user wants notes.\nSo I write them, < and > included.',
    toolCalls: [{ name: 'write_file', arguments: JSON.stringify({ path: 'notes.md', content: BODY }), id: 'call_1' }],
  },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { name: 'get_weather', arguments: JSON.stringify({ city: 'Tokyo "x"', days: 3 }), id: 'call_1' },
      {
        name: 'write_file',
        arguments: JSON.stringify({ path: 'a.txt', content: 'l1\nl2\t"q" \\u00e9' }),
        id: 'call_2',
      },
    ],
  },
  { role: 'assistant', content: 'Text only, [brackets] and <|x|> bits.\n\nTwo.', reasoningContent: 'Think.' },
];

/** Pseudo-random pieces of 1..max UTF-16 units (may split a surrogate pair, as no real token does). */
function split(text: string, seed: number, max: number): string[] {
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < text.length; ) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const n = 1 + (x % max);
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

/** Every delta of `pieces` and the finish, with generated call ids made comparable. */
function stream(parser: OutputParser, pieces: readonly string[]): unknown[] {
  const out: unknown[] = pieces.map((p) => parser.add(p));
  const final = parser.finish();
  out.push({
    ...final,
    toolCalls: final.toolCalls.map((c) => ({ ...c, id: /^call_[a-z0-9]{8}$/.test(c.id ?? '') ? '' : c.id })),
  });
  return out;
}

/** A parser that counts its whole-text parses and the frontiers they reported. */
function counting(parser: NativeChatParser): { parser: NativeChatParser; parses: number; frontiers: Set<number> } {
  const counter = {
    parses: 0,
    frontiers: new Set<number>(),
    parser: {
      parse: (text: string, isPartial: boolean) => parser.parse(text, isPartial),
      stepDelimiters: () => parser.stepDelimiters(),
      parseStep: (text: string) => {
        counter.parses++;
        const step = parser.parseStep(text);
        counter.frontiers.add(step.frontier);
        return step;
      },
    },
  };
  return counter;
}

describe('native-mode streaming parser (incremental vs whole text)', () => {
  let model: NativeModel;
  // Each stream gets its own render: a ChatParser keeps its last partial result (the fallback of a failed parse).
  const render = (template: string | undefined, thinking: boolean) =>
    model.renderChat({ messages: [USER], tools: TOOLS, enableThinking: thinking, template }).parser;

  /** Asserts identical deltas for `text` cut as `pieces`; returns the incremental side's counter. */
  function assertSame(template: string | undefined, thinking: boolean, pieces: string[], what: string) {
    const counter = counting(render(template, thinking));
    const incremental = stream(new NativeOutputParser(counter.parser), pieces);
    const oracle = stream(new WholeTextNativeOutputParser(render(template, thinking)), pieces);
    assert.deepEqual(incremental, oracle, what);
    return counter;
  }

  before(async () => {
    model = await loadModel(TINY_QWEN2);
  });
  after(async () => {
    await model.dispose();
  });

  it("streams the bench's 4,000-token answer with a handful of whole parses", () => {
    const qwen25 = readFileSync(join(TEMPLATES, 'Qwen-Qwen2.5-7B-Instruct.jinja'), 'utf8');
    const pieces = answerTokens();
    const counter = assertSame(qwen25, true, pieces, 'bench answer');
    // Whole parses only at structural boundaries (the tool call's start, its strings' ends, its close).
    assert.ok(counter.parses < 40, `${counter.parses} whole parses for ${pieces.length} pieces`);
    assert.deepEqual([...counter.frontiers].sort(), [0, 1, 3]);
  });

  it('matches the oracle on every vendored template, answer shape and cut', () => {
    let templates = 0;
    const frontiers = new Set<number>();
    for (const file of readdirSync(TEMPLATES).filter((f) => f.endsWith('.jinja'))) {
      const template = readFileSync(join(TEMPLATES, file), 'utf8');
      for (const thinking of [true, false]) {
        let prompt: string;
        try {
          prompt = model.renderChat({ messages: [USER], tools: TOOLS, enableThinking: thinking, template }).prompt;
        } catch {
          break; // a template this tool set cannot render (both parsers would never run on it)
        }
        templates++;
        for (const turn of TURNS) {
          let full: string;
          try {
            full = model.renderChat({
              messages: [USER, turn],
              tools: TOOLS,
              enableThinking: thinking,
              template,
              addGenerationPrompt: false,
            }).prompt;
          } catch {
            continue;
          }
          // A template that rewrites the last turn (drops its reasoning, say) gives no clean suffix: take what follows
          // the common prefix, with a thinking block in front.
          let at = 0;
          while (at < prompt.length && full[at] === prompt[at]) at++;
          const answer =
            at === prompt.length
              ? full.slice(at)
              : `${turn.reasoningContent ?? 'Plan.'}\n</think>\n\n${full.slice(at)}`;
          const broken = answer.slice(0, Math.floor(answer.length * 0.6)) + '{"broken": [1, "x\\q';
          const cuts: [string, number, number][] = [
            [answer, 1, 4],
            [broken, 2, 8],
            [answer.replace(/"/g, "'"), 4, 4],
          ];
          for (const [text, seed, max] of cuts) {
            const counter = assertSame(template, thinking, split(text, seed, max), `${file} thinking=${thinking}`);
            for (const f of counter.frontiers) frontiers.add(f);
          }
        }
      }
    }
    assert.ok(templates >= 130, `${templates} template renders`);
    assert.deepEqual([...frontiers].sort(), [0, 1, 2, 3], 'every frontier kind was exercised');
  });

  it('matches the oracle with markers, escapes and surrogate pairs split across pieces', () => {
    const qwen3 = readFileSync(join(TEMPLATES, 'Qwen-Qwen3-0.6B.jinja'), 'utf8');
    const texts = [
      '<think>\nPlan < and </thin k> but not the end.\n</think>\n\nText <tool_ca and more.\n<tool_call>\n' +
        '{"name": "write_file", "arguments": {"path": "a", "content": "x\\"y\\\\z\\u00e9\\n😀 \\u12"}}\n</tool_call>\n' +
        'Text after the call.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}\n</tool_call>',
      '<think>\nshort\n</think>\n<tool_call>\n{"name": "write_file", "arguments": {"path": "a\\x", "content": "b"}}',
      'No thinking at all, <tool_call>\n{"name": "write_file", "arguments": {"path": "a", "content": "b"}} trailing',
      '<think>\n\n</think>\n\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "x"}}\n</tool_call>'.repeat(3),
    ];
    for (const [i, text] of texts.entries()) {
      for (const thinking of [true, false]) {
        for (let cut = 1; cut <= 6; cut++) {
          // Every cut position of a marker: pieces of `cut` units, shifted by 0..cut-1.
          for (let shift = 0; shift < cut; shift++) {
            const pieces = [text.slice(0, shift)];
            for (let at = shift; at < text.length; at += cut) pieces.push(text.slice(at, at + cut));
            assertSame(qwen3, thinking, pieces, `text ${i} thinking=${thinking} cut=${cut} shift=${shift}`);
          }
        }
      }
    }
  });
});
