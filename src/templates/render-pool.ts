/**
 * Prompt renders off the event loop (issue 32; docs/architecture.md "Threading rules", docs/security.md "Budgets"):
 * a render whose input is large, or that runs past a small inline budget, is done by a worker thread of a piscina pool
 * (render.worker.ts) under the budget it would have had inline, so no template holds the daemon's event loop for
 * longer than the inline budget allows (a few ms), whatever its budget; small renders — nearly all — stay inline,
 * where they cost ≈ 0.1 ms instead of a worker hop (≈ 0.3–0.5 ms measured for a small render). Same text, same errors
 * as an inline render.
 */
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { InternalError, RequestCancelledError } from '../common/errors';
import { GoTemplate } from './go-template';
import { TemplateError } from './go-template.parser';
import { RenderInput, renderPrompt } from './ollama-template.renderer';
import {
  RenderInputSize,
  TemplateBudget,
  TemplateBudgetError,
  TemplateLimits,
  renderInputSize,
  renderLimits,
} from './template-budget';
import type { RenderResult, RenderTask } from './render.worker';

/**
 * The budget of the inline attempt: a render that needs more steps or produces more characters than this is
 * abandoned and done again by a worker under its full budget (renderLimits). Renders are deterministic, so the
 * abandoned attempt is a prefix of the worker's: the same text, the same errors. Measured on the 2-core build machine
 * (Node 20, shared with other builds): hostile templates stopped at 10,000 steps hold the loop 1–10 ms (median; the
 * costliest a loop of `len (slice $.Messages $i)`), against 20–200 ms at the full base budget; printing large values
 * up to 64 Ki characters ≈ 1–2 ms. Legitimate chat templates take 20–60 steps and a few hundred characters per
 * message, so a chat up to INLINE_MAX_MESSAGES renders within it (llama3-instruct, 128 messages of 200 characters:
 * ≈ 900 steps, 0.5–1 ms).
 */
export const INLINE_RENDER_LIMITS: Readonly<TemplateLimits> = Object.freeze({ steps: 10_000, output: 64 * 1024 });

/**
 * Input above which a render goes to a worker without an inline attempt: more messages, or more characters of
 * message text and tool JSON, than an inline budget can render (so the attempt would only be wasted), and whose
 * data conversion alone (Go values for every message and tool) is worth a worker hop.
 */
export const INLINE_MAX_MESSAGES = 128;
export const INLINE_MAX_INPUT_CHARS = 32 * 1024;

/** Worker threads at most: the CPUs less one for the event loop, between 1 and 4. */
export const RENDER_POOL_MAX_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));

/** A worker idle this long ends (its heap and parsed templates are freed), ms. */
export const RENDER_POOL_IDLE_MS = 30_000;

/** The worker thread's entry, next to this file. */
const WORKER_PATH = join(__dirname, 'render.worker.js');

let pool: Piscina<RenderTask, RenderResult> | undefined;

/** The pool, created on the first off-loop render (no thread before; idle threads never keep the process alive). */
function renderPool(): Piscina<RenderTask, RenderResult> {
  pool ??= new Piscina<RenderTask, RenderResult>({
    filename: WORKER_PATH,
    minThreads: 0,
    maxThreads: RENDER_POOL_MAX_THREADS,
    idleTimeout: RENDER_POOL_IDLE_MS,
  });
  return pool;
}

/** Ends the pool's threads (tests, shutdown); a later off-loop render starts a new pool. Running renders fail. */
export async function closeRenderPool(): Promise<void> {
  const p = pool;
  pool = undefined;
  await p?.destroy();
}

/** The SHA-256 of each template's source, computed once per parsed template (the workers' cache key). */
const hashes = new WeakMap<GoTemplate, string>();

function sourceHash(template: GoTemplate): string {
  let hash = hashes.get(template);
  if (hash === undefined) {
    hash = createHash('sha256').update(template.text).digest('hex');
    hashes.set(template, hash);
  }
  return hash;
}

/** Whether an input of this size goes to a worker at once (see INLINE_MAX_MESSAGES / INLINE_MAX_INPUT_CHARS). */
export function isLargeRenderInput(size: RenderInputSize): boolean {
  return size.messages > INLINE_MAX_MESSAGES || size.textChars + size.toolChars > INLINE_MAX_INPUT_CHARS;
}

/**
 * The render data as plain, structured-cloneable data: the fields renderPrompt reads and nothing else (a caller's
 * objects may carry more, e.g. ChatMessage fields no template sees). Tool definitions and call arguments are JSON
 * values from the request and are cloned as they are.
 */
function plainInput(input: RenderInput): RenderInput {
  const opt = <K extends string, V>(key: K, value: V | undefined) =>
    (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
  return {
    messages: (input.messages ?? []).map((m) => ({
      role: m.role,
      content: m.content,
      ...opt('thinking', m.thinking),
      ...opt('images', m.images),
      ...opt(
        'toolCalls',
        m.toolCalls?.map((c) => ({
          ...opt('id', c.id),
          function: { index: c.function.index, name: c.function.name, arguments: c.function.arguments },
        })),
      ),
      ...opt('toolName', m.toolName),
      ...opt('toolCallId', m.toolCallId),
    })),
    ...opt('tools', input.tools),
    ...opt('think', input.think),
    ...opt('thinkLevel', input.thinkLevel),
    ...opt('isThinkSet', input.isThinkSet),
    ...opt('suffix', input.suffix),
    ...opt('prompt', input.prompt),
  };
}

/** The error a worker reported, as the inline render would have thrown it. */
function rebuildError(result: Exclude<RenderResult, { ok: true }>): Error {
  if ('budget' in result) return new TemplateBudgetError(result.budget.resource, result.budget.limit);
  if (result.error.name === 'TemplateError') return new TemplateError(result.error.message);
  const err = new Error(result.error.message);
  err.name = result.error.name;
  return err;
}

/**
 * Renders `input` with `template` by a worker thread under `limits`, honouring `signal` (a queued render is dropped, a
 * running one is stopped: its thread is terminated).
 * @throws TemplateError / TemplateBudgetError / Error as renderPrompt would; RequestCancelledError when `signal`
 *   fired; InternalError when the worker failed (it died, the data could not be cloned).
 */
export async function renderInWorker(
  template: GoTemplate,
  input: RenderInput,
  limits: TemplateLimits,
  signal?: AbortSignal,
): Promise<string> {
  if (signal?.aborted) throw new RequestCancelledError();
  const task: RenderTask = { source: template.text, hash: sourceHash(template), input: plainInput(input), limits };
  let result: RenderResult;
  try {
    result = await renderPool().run(task, signal ? { signal } : {});
  } catch (err) {
    if (signal?.aborted) throw new RequestCancelledError();
    throw new InternalError(`template render worker failed: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  }
  if (!result.ok) throw rebuildError(result);
  return result.text;
}

/**
 * renderPrompt (reference/ollama-api.md §8.2) that never holds the event loop for more than an inline budget: a large
 * input ({@link isLargeRenderInput}) is rendered by a worker; any other is rendered inline under the smaller of its
 * budget and {@link INLINE_RENDER_LIMITS}, and when that runs out, rendered again by a worker under its full budget
 * (`renderLimits(input)`, as renderPrompt's default). The text and the errors are those of `renderPrompt(template,
 * input)`.
 * @throws TemplateError when execution fails; TemplateBudgetError (`template: execution budget exceeded: …`, with the
 *   full budget's limits) when the render passes its budget; RequestCancelledError when `signal` fired before or
 *   during a worker's render; InternalError when a worker failed.
 */
export async function renderPromptAsync(
  template: GoTemplate,
  input: RenderInput,
  signal?: AbortSignal,
): Promise<string> {
  if (signal?.aborted) throw new RequestCancelledError();
  const size = renderInputSize(input);
  const limits = renderLimits(size);
  if (!isLargeRenderInput(size)) {
    const inline: TemplateLimits = {
      steps: Math.min(limits.steps, INLINE_RENDER_LIMITS.steps),
      output: Math.min(limits.output, INLINE_RENDER_LIMITS.output),
    };
    try {
      return renderPrompt(template, input, new TemplateBudget(inline));
    } catch (err) {
      const full = inline.steps === limits.steps && inline.output === limits.output;
      if (!(err instanceof TemplateBudgetError) || full) throw err;
    }
  }
  return renderInWorker(template, input, limits, signal);
}
