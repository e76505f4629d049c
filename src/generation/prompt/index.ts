/**
 * The prompt stage of generate and chat (docs/architecture.md, "The prompt stage"): PromptService and the pieces it
 * is built from — render (native and rendered mode), tokenize and fit, images, format grammars, the Go-template port.
 */
export * from './prompt.service';
export * from './prompt.types';
export * from './render-options';
export * from './messages';
export * from './native-render';
export * from './go-render';
export * from './fit';
export * from './media';
export * from './audio';
export * from './format';
export * from './go-template.port';
export * from './template-renderer';
export * from './grammar-budget';
