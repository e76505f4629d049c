/**
 * Ollama-compatible prompt templates: a Go `text/template` engine (lexer, parser, executor written here), Ollama's
 * rendering contract (messages / legacy / FIM), template introspection and capabilities, the bundled template
 * library (autodetection), and the streaming tool-call and thinking parsers. Reference §8.
 */
export { GoTemplate, TemplateError, OLLAMA_FUNCS, toTypeScriptType } from './go-template';
export {
  TemplateBudget,
  TemplateBudgetError,
  DEFAULT_TEMPLATE_LIMITS,
  renderLimits,
  renderInputSize,
  TEMPLATE_BASE_STEPS,
  TEMPLATE_BASE_OUTPUT,
} from './template-budget';
export type { TemplateLimits, BudgetInput, RenderInputSize } from './template-budget';
export {
  renderPromptAsync,
  renderInWorker,
  closeRenderPool,
  isLargeRenderInput,
  INLINE_RENDER_LIMITS,
  INLINE_MAX_MESSAGES,
  INLINE_MAX_INPUT_CHARS,
} from './render-pool';
export { probeTemplateBudget } from './template-probe';
export type { GoFunc } from './go-template';
export { GoStruct, goJson, formatValue, sprintf } from './go-values';
export { renderPrompt, collate, applyImageMarkers, messageStruct, toolsValue } from './ollama-template.renderer';
export type { RenderInput, TemplateMessage, TemplateTool } from './ollama-template.renderer';
export {
  templateVars,
  templateCapabilities,
  jinjaCapabilities,
  inferToolCallTag,
  inferThinkingTags,
  findToolCallBlock,
} from './template-inspection';
export { detectTemplate, loadLibraryTemplate, boundedLevenshtein, TEMPLATE_ASSETS_DIR } from './template-library';
export type { LibraryTemplate } from './template-library';
export { ToolCallParser, newToolCallId } from './tool-call.parser';
export type { ParsedToolCall, ToolCallChunk } from './tool-call.parser';
export { ThinkingParser } from './thinking.parser';
export { inferToolCallSyntax } from './tool-call.syntax';
export type { ToolCallSyntax, ToolCallSlot } from './tool-call.syntax';
export { buildToolCallGrammar, argumentsSchema, ToolSchemaError } from './tool-call.grammar';
export type { GrammarTool, ToolCallGrammarOptions } from './tool-call.grammar';
export { gbnfLiteral, gbnfCharClass, prefixRules, untilRules } from './gbnf';
