/**
 * Part of the bench's event-loop section (`npm run bench -- --sections event-loop`): what parsing a streamed answer
 * with tools costs per token on the JS thread, where it delays every other request.
 *
 * - parserCost(): a synthetic 4,000-token answer (thinking, then text, then one long `write_file` tool call whose
 *   arguments hold most of the tokens, as when a model writes a file through a tool) fed token by token (4 characters
 *   each) through the daemon's own output parsers: rendered mode (Go TEMPLATE: ThinkingParser + ToolCallParser) and
 *   native mode (the llama.cpp chat parser of tiny-qwen2-tools' Jinja template, through NativeOutputParser, and
 *   through WholeTextNativeOutputParser, the whole-text reference that parses the whole answer on every token). A
 *   parser whose cost grows with the answer shows it as a mean over the last 500 tokens far above the first 500's.
 * - chatStreamGaps(): a live /api/chat stream with tools of up to 4,000 tokens on the daemon: the mean gap between
 *   tokens over the first and the last 500 tokens, and the longest gap (the model's text is random, so this shows
 *   the per-token cost that grows with the answer's length whatever it holds).
 */
import { performance } from 'node:perf_hooks';
import type { NativeChatParser } from '../binding';
import {
  NativeOutputParser,
  OutputParser,
  RenderedOutputParser,
  WholeTextNativeOutputParser,
} from '../src/generation/output';
import { loadBinding } from '../src/native/load-binding';
import { TemplateTool, ThinkingParser, ToolCallParser } from '../src/templates';
import { forEachLine } from './clients';
import { gaps, median } from './stats';

/** Tokens of the answer (streamed pieces). */
export const ANSWER_TOKENS = 4000;
/** Characters per token of the synthetic answer (about what a BPE vocabulary gives for English). */
const CHARS_PER_TOKEN = 4;
/** Tokens at each end of the answer whose mean cost is compared. */
const EDGE = 500;

const WRITE_FILE = {
  name: 'write_file',
  description: 'Writes a text file.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
  },
};

/** The answer in Hermes/Qwen syntax, cut into ANSWER_TOKENS pieces of CHARS_PER_TOKEN characters. */
export function answerTokens(): string[] {
  const total = ANSWER_TOKENS * CHARS_PER_TOKEN;
  const thinking =
    '<think>\n' + 'The user wants the notes written to a file, so I call the tool. '.repeat(30) + '\n</think>\n\n';
  const text = 'I will write the notes now. '.repeat(70);
  const open = '<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.md", "content": "';
  const close = '"}}\n</tool_call>';
  const line = '- item with \\"quotes\\", {braces} and a \\\\ backslash\\n';
  let body = '';
  while (thinking.length + text.length + open.length + body.length + close.length < total) body += line;
  const answer = (thinking + text + open + body).slice(0, total - close.length) + close;
  const out: string[] = [];
  for (let i = 0; i < answer.length; i += CHARS_PER_TOKEN) out.push(answer.slice(i, i + CHARS_PER_TOKEN));
  return out;
}

/** Per-token cost of one pass: mean µs over the first and the last EDGE tokens, longest token ms, total ms. */
interface ParserPass {
  firstUs: number;
  lastUs: number;
  longestMs: number;
  totalMs: number;
}

function pass(parser: OutputParser, tokens: readonly string[]): ParserPass {
  const times: number[] = [];
  let calls = 0;
  for (const t of tokens) {
    const start = performance.now();
    calls += parser.add(t).toolCalls.length;
    times.push(performance.now() - start);
  }
  const start = performance.now();
  calls += parser.finish().toolCalls.length;
  const finishMs = performance.now() - start;
  if (calls !== 1) throw new Error(`parser cost: expected one tool call at the end, got ${calls}`);
  const mean = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / xs.length) * 1000;
  return {
    firstUs: mean(times.slice(0, EDGE)),
    lastUs: mean(times.slice(-EDGE)),
    longestMs: Math.max(finishMs, ...times),
    totalMs: times.reduce((a, b) => a + b, finishMs),
  };
}

/** Medians of `runs` passes (after one warm-up pass). */
function passes(make: () => OutputParser, tokens: readonly string[], runs: number): ParserPass {
  pass(make(), tokens);
  const all = Array.from({ length: runs }, () => pass(make(), tokens));
  return {
    firstUs: median(all.map((p) => p.firstUs)),
    lastUs: median(all.map((p) => p.lastUs)),
    longestMs: median(all.map((p) => p.longestMs)),
    totalMs: median(all.map((p) => p.totalMs)),
  };
}

/** The native chat parser of `modelPath`'s Jinja template for a chat with the write_file tool (thinking on). */
async function nativeParser(
  modelPath: string,
): Promise<{ parser: NativeChatParser; format: string; close(): Promise<void> }> {
  const binding = loadBinding();
  const model = new binding.Model(modelPath, {});
  await model.load();
  const render = model.renderChat({
    messages: [{ role: 'user', content: 'Write my notes to notes.md.' }],
    tools: [
      { name: WRITE_FILE.name, description: WRITE_FILE.description, parameters: JSON.stringify(WRITE_FILE.parameters) },
    ],
    enableThinking: true,
  });
  return { parser: render.parser, format: render.format, close: () => model.dispose() };
}

/** One row of parserCost: the mode and its figures. */
export interface ParserCostRow {
  mode: string;
  figures: ParserPass;
}

/**
 * Runs the synthetic answer through rendered mode's parsers and, with the addon and `modelPath` (a model whose Jinja
 * template has Hermes-style tool calls), native mode's; `runs` passes each (medians).
 */
export async function parserCost(modelPath: string, runs: number): Promise<ParserCostRow[]> {
  const tokens = answerTokens();
  const tools: TemplateTool[] = [{ type: 'function', function: WRITE_FILE }];
  const rows: ParserCostRow[] = [
    {
      mode: 'rendered mode (Go TEMPLATE: thinking + tool-call parsers)',
      figures: passes(
        () =>
          new RenderedOutputParser(
            new ThinkingParser('<think>', '</think>'),
            new ToolCallParser(null, tools, '<tool_call>'),
          ),
        tokens,
        runs,
      ),
    },
  ];
  const native = await nativeParser(modelPath);
  try {
    rows.push({
      mode: `native mode (llama.cpp chat parser, format ${native.format})`,
      figures: passes(() => new NativeOutputParser(native.parser), tokens, runs),
    });
    rows.push({
      mode: `native mode, whole-text reference (the parse of the whole answer per token)`,
      figures: passes(() => new WholeTextNativeOutputParser(native.parser), tokens, runs),
    });
  } finally {
    await native.close();
  }
  return rows;
}

/** Token arrival gaps of one streamed chat: mean over the first and the last EDGE gaps, the longest, the count. */
export interface StreamGaps {
  firstMs: number;
  lastMs: number;
  longestMs: number;
  tokens: number;
}

/**
 * Streams one /api/chat with the write_file tool on `model` (up to ANSWER_TOKENS tokens) and measures the gaps
 * between its records. `options` are the request's (sampling, threads, num_ctx).
 */
export async function chatStreamGaps(
  base: string,
  model: string,
  options: Record<string, unknown>,
): Promise<StreamGaps> {
  const times: number[] = [];
  const res = await fetch(`${base}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'Write my notes to notes.md.' }],
      tools: [{ type: 'function', function: WRITE_FILE }],
      stream: true,
      options: { ...options, num_predict: ANSWER_TOKENS },
    }),
  });
  await forEachLine('chat stream', res, (line, at) => {
    const record = JSON.parse(line) as { error?: string; done?: boolean };
    if (record.error) throw new Error(`chat stream: ${record.error}`);
    if (!record.done) times.push(at);
  });
  const g = gaps(times);
  const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  return {
    firstMs: mean(g.slice(0, EDGE)),
    lastMs: mean(g.slice(-EDGE)),
    longestMs: g.length > 0 ? Math.max(...g) : NaN,
    tokens: times.length,
  };
}
