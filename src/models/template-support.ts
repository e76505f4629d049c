import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  detectTemplate,
  GoTemplate,
  jinjaCapabilities,
  LibraryTemplate,
  TEMPLATE_ASSETS_DIR,
  templateCapabilities,
} from '../templates';

/**
 * The template facts the model catalogue needs, over the template engine (src/templates): capabilities of a Go
 * template and of a GGUF Jinja template (reference/ollama-api.md §8.1, §8.7) and create-time autodetection against
 * the bundled library in assets/ollama-templates (§8.3). One seam, so the catalogue never parses templates itself.
 */

/** What a Go template supports. */
export interface GoTemplateCapabilities {
  tools: boolean;
  insert: boolean;
  thinking: boolean;
}

/** What a Jinja chat template supports. */
export interface JinjaCapabilities {
  tools: boolean;
  thinking: boolean;
}

/** A bundled template matched by autodetection: library name, Go template text, params layer (e.g. `{stop}`). */
export type DetectedTemplate = LibraryTemplate;

/**
 * Capabilities of a Go template (§8.7, Ollama's Template.Vars and thinking.InferTags): `.Tools` ⇒ tools, `.Suffix`
 * ⇒ insert, thinking tags around `.Thinking` ⇒ thinking. A stored template that does not parse supports nothing
 * extra (it could not render a prompt either).
 */
export function goTemplateCapabilities(text: string): GoTemplateCapabilities {
  try {
    return templateCapabilities(GoTemplate.parse(text));
  } catch {
    return { tools: false, insert: false, thinking: false };
  }
}

/** Capabilities of a Jinja template (§8.1): `tools`/`tool_call` ⇒ tools; `<think>`+`</think>` or the split idiom. */
export function jinjaTemplateCapabilities(jinja: string): JinjaCapabilities {
  return jinjaCapabilities(jinja);
}

/**
 * Ollama's template.Named (§8.3): the bundled template whose Jinja twin is within Levenshtein distance < 100 of
 * `jinja`; null when none is, for an empty template, or when the library is not installed.
 */
export function detectBundledTemplate(jinja: string): DetectedTemplate | null {
  if (jinja === '' || !hasTemplateLibrary()) return null;
  return detectTemplate(jinja);
}

/** Whether the bundled template library (assets/ollama-templates/index.json) is installed. */
export function hasTemplateLibrary(): boolean {
  return existsSync(join(TEMPLATE_ASSETS_DIR, 'index.json'));
}
