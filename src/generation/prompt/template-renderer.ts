import { Injectable } from '@nestjs/common';
import { GoTemplatesApi, loadGoTemplates } from './go-template.port';

/**
 * DI token of the {@link TemplateRenderer}: the Go-template engine that renders a model's Modelfile `TEMPLATE`
 * (rendered mode, reference/ollama-api.md §8.1). Default: {@link GoTemplateRenderer} (src/templates).
 */
export const TEMPLATE_RENDERER = Symbol('TEMPLATE_RENDERER');

/**
 * Chooses the engine that renders Go templates. A model with a Go `TEMPLATE` is rendered by the engine's
 * `renderPrompt` (and its output parsed with the engine's tool-call and thinking parsers); a model without one, or
 * every model when `engine()` returns undefined, is rendered by llama.cpp from the GGUF's Jinja template (native mode).
 */
export interface TemplateRenderer {
  /** The engine to use for the next render, or undefined for native mode. Called once per prompt render. */
  engine(): GoTemplatesApi | undefined;
}

/** The default {@link TemplateRenderer}: the daemon's own Go text/template port (src/templates). */
@Injectable()
export class GoTemplateRenderer implements TemplateRenderer {
  engine(): GoTemplatesApi | undefined {
    return loadGoTemplates();
  }
}
