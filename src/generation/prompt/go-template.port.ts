import * as templates from '../../templates';
import { ChatMessage, ToolCall, ToolDefinition } from '../generation.types';

/**
 * The seam to the Go-template engine (src/templates): the subset of its API that rendered mode (reference/
 * ollama-api.md §8.1, §8.2, §8.5, §8.6) needs, behind an interface so unit tests can swap in a scripted engine.
 */

/** A parsed Go template (opaque here). */
export type GoTemplateHandle = object;

/** Values a Go template is executed with (§8.2). */
export interface GoTemplateValues {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  think?: boolean;
  thinkLevel?: string;
  isThinkSet?: boolean;
  suffix?: string;
  prompt?: string;
}

/** A streaming tool-call parser (§8.5). */
export interface GoToolCallParser {
  /** The tool-call tag inferred from the template (`{` when none), when the engine exposes it. */
  readonly tag?: string;
  add(chunk: string): { content: string; toolCalls: ToolCall[] };
  finish(): { content: string; toolCalls: ToolCall[] };
}

/** A streaming thinking splitter (§8.6). */
export interface GoThinkingParser {
  add(chunk: string): { thinking: string; content: string };
  finish?(): { thinking: string; content: string };
}

/** How a template writes tool calls (§8.5); see src/templates/tool-call.syntax.ts. */
export type GoToolCallSyntax = templates.ToolCallSyntax;

/** The Go-template engine API used by rendered mode. */
export interface GoTemplatesApi {
  GoTemplate: { parse(text: string): GoTemplateHandle };
  renderPrompt(template: GoTemplateHandle, values: GoTemplateValues): string;
  /**
   * renderPrompt that does not hold the event loop (src/templates/render-pool.ts: a large or long render runs in a
   * worker thread): the same text and errors, plus RequestCancelledError when `signal` fired (a running render is
   * stopped). Optional: an engine without it (a scripted test engine) renders with renderPrompt.
   */
  renderPromptAsync?(template: GoTemplateHandle, values: GoTemplateValues, signal?: AbortSignal): Promise<string>;
  templateCapabilities(template: GoTemplateHandle): { tools: boolean; insert: boolean; thinking: boolean };
  ToolCallParser: new (template: GoTemplateHandle, tools: ToolDefinition[]) => GoToolCallParser;
  ThinkingParser: new (open: string, close: string, startInThinking?: boolean) => GoThinkingParser;
  inferThinkingTags(template: GoTemplateHandle): unknown;
  /** The template's tool-call syntax, for the grammar that forces a call. */
  inferToolCallSyntax(template: GoTemplateHandle): GoToolCallSyntax;
  /**
   * GBNF admitting only calls in `syntax` whose arguments follow each tool's schema (undefined when no tool has a
   * name); throws when a schema cannot be converted by `toGrammar`.
   */
  buildToolCallGrammar(
    syntax: GoToolCallSyntax,
    tools: ToolDefinition[],
    toGrammar: (schema: string) => string,
    options?: { parallel?: boolean; thinking?: { open: string; close: string; startInThinking: boolean } },
  ): string | undefined;
}

let cached: GoTemplatesApi | null | undefined;

/** The real engine (src/templates) typed as the port. */
const REAL: GoTemplatesApi = templates as unknown as GoTemplatesApi;

/** The Go-template engine in use: src/templates, or the one set by setGoTemplatesForTesting (null = none). */
export function loadGoTemplates(): GoTemplatesApi | undefined {
  if (cached === undefined) return REAL;
  return cached ?? undefined;
}

/** Overrides the engine (tests); `undefined` resets to the run-time lookup, `null` forces "not available". */
export function setGoTemplatesForTesting(api: GoTemplatesApi | null | undefined): void {
  cached = api;
}

/**
 * The 400 message of a template that failed to parse or execute: Ollama's `template error: <Go error>` (reference
 * §5.2), except a render stopped by its execution budget (src/templates/template-budget.ts), whose own message
 * already starts with `template: ` (`template: execution budget exceeded: more than N steps`), as Go's errors do.
 */
export function templateErrorMessage(err: unknown): string {
  if (err instanceof templates.TemplateBudgetError) return err.message;
  return `template error: ${(err as Error).message}`;
}

/** inferThinkingTags' result as `{open, close}` (accepts an object or a `[open, close]` pair); undefined if none. */
export function thinkingTags(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
): { open: string; close: string } | undefined {
  const tags = api.inferThinkingTags(template);
  if (Array.isArray(tags) && typeof tags[0] === 'string' && typeof tags[1] === 'string' && tags[0] && tags[1]) {
    return { open: tags[0], close: tags[1] };
  }
  if (tags && typeof tags === 'object') {
    const t = tags as { open?: unknown; close?: unknown };
    if (typeof t.open === 'string' && typeof t.close === 'string' && t.open && t.close) {
      return { open: t.open, close: t.close };
    }
  }
  return undefined;
}
