/**
 * `GoTemplate`: a parsed Go `text/template` with Ollama's function map (template/template.go `funcs`).
 */
import { BUILTINS, FuncError, GoFunc, executeTree } from './go-template.executor';
import { ListNode } from './go-template.nodes';
import { TemplateError, Tree, parseTemplate } from './go-template.parser';
import { GoStruct, goJson } from './go-values';
import { TemplateBudget } from './template-budget';

export { TemplateError };

function localDate(offsetDays: number): string {
  const d = new Date();
  d.setDate(d.getDate() + offsetDays);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

function mapTsType(t: unknown): string {
  switch (t) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return 'any[]';
    case 'object':
      return 'Record<string, any>';
    case 'null':
      return 'null';
    default:
      return 'any';
  }
}

/** Ollama's `api.ToolProperty.ToTypeScriptType()` over a ToolProperty struct (or a plain JSON-schema object). */
export function toTypeScriptType(v: unknown): string {
  let fields: Record<string, unknown>;
  if (v instanceof GoStruct && v.typeName === 'api.ToolProperty') fields = v.fields;
  else return 'any';
  const anyOf = fields.AnyOf;
  if (Array.isArray(anyOf) && anyOf.length > 0) return anyOf.map((p) => toTypeScriptType(p)).join(' | ');
  const type = fields.Type;
  const types = Array.isArray(type) ? type : type === undefined || type === null || type === '' ? [] : [type];
  if (types.length === 0) return 'any';
  return types.map(mapTsType).join(' | ');
}

/** Ollama's extra template functions: json, currentDate, yesterdayDate, toTypeScriptType (reference §8.2). */
export const OLLAMA_FUNCS: Record<string, GoFunc> = {
  json: {
    fn: (v) => {
      try {
        return goJson(v);
      } catch {
        return '';
      }
    },
    fixed: 1,
    variadic: false,
  },
  currentDate: { fn: () => localDate(0), fixed: 0, variadic: true, stringParams: [0] },
  yesterdayDate: { fn: () => localDate(-1), fixed: 0, variadic: true, stringParams: [0] },
  toTypeScriptType: { fn: (v) => toTypeScriptType(v), fixed: 1, variadic: false },
};

/**
 * A parsed Go `text/template` (Go's `template.New("").Option("missingkey=zero").Funcs(ollamaFuncs).Parse(text)`).
 *
 * - `parse(text)` throws {@link TemplateError} with Go's messages (`template: :1: unexpected "}" in operand`).
 * - `execute(data)` renders with `data` as dot; data values follow the Go value model in go-values.ts (plain objects
 *   are maps, {@link GoStruct}s are structs, bigint is int, number is float64). Throws {@link TemplateError}.
 * - `root` / `trees` expose the parse trees for Ollama's introspection (Vars, tool-call tag and thinking-tag
 *   inference, the legacy `.Response` cut).
 */
export class GoTemplate {
  private constructor(
    /** The template source. */
    readonly text: string,
    /** All trees (the main one under the name `""`, plus `{{define}}`/`{{block}}` ones). */
    readonly trees: ReadonlyMap<string, Tree>,
    readonly funcs: Readonly<Record<string, GoFunc>>,
  ) {}

  /**
   * Parses a template. `extraFuncs` adds functions (name → implementation; errors thrown become
   * `error calling <name>: ...`).
   * @throws TemplateError on syntax errors, unknown functions, undefined variables.
   */
  static parse(text: string, extraFuncs: Record<string, GoFunc> = {}): GoTemplate {
    const funcs = { ...BUILTINS, ...OLLAMA_FUNCS, ...extraFuncs };
    const trees = parseTemplate('', text, new Set(Object.keys(funcs)));
    return new GoTemplate(text, trees, funcs);
  }

  /** Root list of the main template. */
  get root(): ListNode {
    return this.trees.get('')?.root ?? { type: 'list', pos: 0, nodes: [] };
  }

  /**
   * Renders the main template with `data` under `budget` (default: a fresh one with DEFAULT_TEMPLATE_LIMITS).
   * @throws TemplateError; TemplateBudgetError when the budget runs out.
   */
  execute(data: unknown, budget?: TemplateBudget): string {
    return this.executeRoot(this.root, data, budget);
  }

  /**
   * Renders an arbitrary root list (e.g. a modified copy of {@link root}) in this template's context, under `budget`
   * (pass the same one to every execution of one render).
   * @throws TemplateError; TemplateBudgetError when the budget runs out.
   */
  executeRoot(root: ListNode, data: unknown, budget?: TemplateBudget): string {
    return executeTree(this.text, '', root, this.trees, this.funcs, data, budget);
  }
}

export { FuncError };
export type { GoFunc };
