/**
 * The entry of a render worker thread (render-pool.ts, a piscina pool): renders one prompt per task with Ollama's
 * template contract (renderPrompt, reference/ollama-api.md §8.2) under the budget the daemon computed, exactly as the
 * daemon would inline. Loads only src/templates (no NestJS, no addon). Parsed templates are kept per thread, by the
 * SHA-256 of their source, so the Modelfile TEMPLATE of a model is parsed once per thread, not once per render.
 */
import { GoTemplate } from './go-template';
import { RenderInput, renderPrompt } from './ollama-template.renderer';
import { TemplateBudget, TemplateBudgetError, TemplateLimits } from './template-budget';

/** One render: the template's source (and its hash, the cache key), the plain render input, the render's limits. */
export interface RenderTask {
  source: string;
  /** SHA-256 (hex) of `source`. */
  hash: string;
  input: RenderInput;
  limits: TemplateLimits;
}

/**
 * The outcome of a render, as plain data (a thrown error would lose its class crossing the thread boundary): the
 * text, or the budget that ran out (rebuilt into the same TemplateBudgetError on the daemon's side), or any other
 * error's class name and message (TemplateError and the rest, whose messages become `template error: …`).
 */
export type RenderResult =
  | { ok: true; text: string }
  | { ok: false; budget: { resource: 'steps' | 'output'; limit: number } }
  | { ok: false; error: { name: string; message: string } };

/** Parsed templates kept per thread (insertion order = age; a hit moves the entry to the end). */
const PARSED_CAPACITY = 32;
const parsed = new Map<string, GoTemplate>();

/** The parsed template of `source`, from this thread's cache or parsed now (and kept). */
function templateOf(source: string, hash: string): GoTemplate {
  let template = parsed.get(hash);
  if (template) {
    parsed.delete(hash);
  } else {
    template = GoTemplate.parse(source);
    if (parsed.size >= PARSED_CAPACITY) parsed.delete(parsed.keys().next().value as string);
  }
  parsed.set(hash, template);
  return template;
}

/** piscina's task function: renders `task` and reports the outcome (never throws). */
export default function render(task: RenderTask): RenderResult {
  try {
    const template = templateOf(task.source, task.hash);
    return { ok: true, text: renderPrompt(template, task.input, new TemplateBudget(task.limits)) };
  } catch (err) {
    if (err instanceof TemplateBudgetError) return { ok: false, budget: { resource: err.resource, limit: err.limit } };
    const e = err instanceof Error ? err : new Error(String(err));
    return { ok: false, error: { name: e.name, message: e.message } };
  }
}
