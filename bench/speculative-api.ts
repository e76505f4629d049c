/**
 * Bench section `speculative`, a real-text-like workload through the HTTP API (issue 35 item 3): prompts whose
 * answer repeats a long span of the prompt, as an agent's output does (quoted text, an edited file written back),
 * forced through `format` — a JSON Schema whose `const` is the answer — since the bench models have random weights
 * and would never copy on their own. Two tasks: the copy task (the text with one word changed, as `{"text": …}`)
 * and an "edit this file" task (a 60-line TypeScript file in the prompt, the file with one identifier renamed as
 * `{"path": …, "content": …}`). Each without and with n-gram drafting: the daemon through /api/generate (`format`,
 * `draft_ngram`), llama-server through /completion (`json_schema`, `--spec-type ngram-simple`), on bench-1b Q4_0,
 * single stream, greedy, the first ANSWER_TOKENS tokens of the answer, server-reported decode rates.
 *
 * A schema's `const` fixes the answer's text, not its tokens: the grammar allows every token that spells a prefix of
 * what is left, and a random-weight model picks among them at random, so its answer comes out in shorter pieces than
 * the prompt's tokenization of the same text (the rows give both counts). A trained model writes the usual tokens,
 * so n-gram lookup matches more there than here: these rows are a floor for it.
 */
import { execFileSync } from 'node:child_process';
import { stopServer } from './servers';
import {
  CHANGED,
  COPY_PROMPT,
  daemonSideBySide,
  gainRows,
  type SideBySide,
  type SpeculativeContext,
  type Variant,
  type Workload,
} from './speculative-common';

/** Tokens of the answer measured per request (the edited file is longer: the first ones are timed). */
const ANSWER_TOKENS = 256;

/** The file of the "edit this file" task, 60 lines. */
const SOURCE = `import { readFile } from 'node:fs/promises';

/** One line of an order: a product, how many, the price of one in cents. */
export interface OrderLine {
  sku: string;
  quantity: number;
  unitPrice: number;
}

/** An order: who placed it, when, its lines and an optional discount code. */
export interface Order {
  id: string;
  customer: string;
  placedAt: Date;
  lines: OrderLine[];
  discountCode?: string;
}

const DISCOUNTS: Record<string, number> = {
  WELCOME10: 0.1,
  SPRING15: 0.15,
  LOYAL20: 0.2,
};

/** The total of an order's lines in cents, before any discount. */
export function totalPrice(order: Order): number {
  let sum = 0;
  for (const line of order.lines) {
    sum += line.quantity * line.unitPrice;
  }
  return sum;
}

/** The discount of an order in cents (0 without a known code). */
export function discountOf(order: Order): number {
  const rate = order.discountCode ? (DISCOUNTS[order.discountCode] ?? 0) : 0;
  return Math.round(totalPrice(order) * rate);
}

/** What the customer pays in cents: the total less the discount, never below zero. */
export function amountDue(order: Order): number {
  return Math.max(0, totalPrice(order) - discountOf(order));
}

/** Reads orders from a JSON file (an array of orders with ISO dates). */
export async function loadOrders(path: string): Promise<Order[]> {
  const raw = JSON.parse(await readFile(path, 'utf8')) as (Omit<Order, 'placedAt'> & { placedAt: string })[];
  return raw.map((o) => ({ ...o, placedAt: new Date(o.placedAt) }));
}

/** The orders of one customer, newest first. */
export function ordersOf(orders: Order[], customer: string): Order[] {
  return orders
    .filter((o) => o.customer === customer)
    .sort((a, b) => b.placedAt.getTime() - a.placedAt.getTime());
}

/** The sum of what a customer paid over all their orders, in cents. */
export function lifetimeValue(orders: Order[], customer: string): number {
  return ordersOf(orders, customer).reduce((sum, o) => sum + amountDue(o), 0);
}
`;
const PATH = 'src/orders.ts';
const EDITED = SOURCE.replaceAll('totalPrice', 'subtotalOf');
const EDIT_PROMPT =
  `Rename the function totalPrice to subtotalOf everywhere in ${PATH}. Answer with the whole edited file as JSON: ` +
  `{"path": "${PATH}", "content": "<the file>"}.\n\n${PATH}:\n\`\`\`ts\n${SOURCE}\`\`\`\n\n`;

/** A workload whose answer is the JSON Schema `schema` forced on both servers (`format`; `json_schema`). */
function forced(prompt: string, schema: Record<string, unknown>): Workload {
  return { prompt, predict: ANSWER_TOKENS, daemonBody: { format: schema }, peerBody: { json_schema: schema } };
}

const TASKS: { label: string; answer: string; workload: Workload }[] = [
  {
    label: 'copy task',
    answer: JSON.stringify({ text: CHANGED }),
    workload: forced(COPY_PROMPT, {
      type: 'object',
      properties: { text: { const: CHANGED } },
      required: ['text'],
    }),
  },
  {
    label: 'edit this file (60 lines)',
    answer: JSON.stringify({ path: PATH, content: EDITED }),
    workload: forced(EDIT_PROMPT, {
      type: 'object',
      properties: { path: { const: PATH }, content: { const: EDITED } },
      required: ['path', 'content'],
    }),
  },
];

const PLAIN: Variant = { label: 'no speculation', model: 'spec-target', options: {}, peerArgs: [] };
const NGRAM: Variant = {
  label: 'n-gram (draft_ngram; --spec-type ngram-simple)',
  model: 'spec-target',
  options: { draft_ngram: true },
  peerArgs: ['--spec-type', 'ngram-simple'],
};

/** Adds the rows of both tasks: no speculation and n-gram drafting, daemon and llama-server side by side. */
export async function apiWorkloadRows(ctx: SpeculativeContext): Promise<void> {
  const binding = ctx.binding();
  const vocab = new binding.Model(ctx.targetFile, { vocabOnly: true });
  await vocab.load();
  const answerTokens = TASKS.map((t) => vocab.tokenize(t.answer, false, false).length);
  await vocab.dispose();

  const measured: SideBySide[] = []; // per task: [plain, ngram]
  const daemon = await ctx.startDaemon();
  try {
    const modelfile = `FROM ${ctx.targetFile}\n`;
    await ctx.post(`${daemon.base}/api/create`, { model: PLAIN.model, modelfile, stream: false });
    execFileSync('sync');
    for (const t of TASKS) measured.push(await daemonSideBySide(ctx, daemon.base, [PLAIN, NGRAM], t.workload));
  } finally {
    await stopServer(daemon);
  }

  TASKS.forEach((t, i) => {
    const [plainOurs, ngramOurs] = measured[i].ours;
    const [plainTheirs, ngramTheirs] = measured[i].theirs;
    const label =
      `through the API, format = JSON Schema const, ${t.label} (answer ${answerTokens[i]} tokens as the prompt ` +
      `spells it; ${plainOurs.tokens} generated, at most ${ANSWER_TOKENS})`;
    ctx.row(
      `decode tok/s, ${label}, no speculation`,
      plainOurs.rate,
      plainTheirs.map((f) => f.rate),
      'tok/s',
      1,
      'ratio',
    );
    ctx.row(
      `  ${NGRAM.label}, tok/s`,
      ngramOurs.rate,
      ngramTheirs.map((f) => f.rate),
      'tok/s',
      1,
      'ratio',
    );
    gainRows(ctx, '    ', { spec: ngramOurs, plain: plainOurs }, { spec: ngramTheirs, plain: plainTheirs });
  });
}
