/**
 * The tool-call syntax a Go template shows for an assistant's `.ToolCalls` (reference §8.5), read from the template
 * the way Ollama reads the tool-call tag: from the first `{{ if .ToolCalls }}` block. Used to build a grammar that
 * admits only that syntax (tool-call.grammar.ts) when a call is forced.
 */
import { GoTemplate } from './go-template';
import { ArgNode, ListNode, Node } from './go-template.nodes';
import { findToolCallBlock, inferToolCallTag } from './template-inspection';

/** A slot of the call object: the tool name (a JSON string) or its arguments (a JSON object). */
export type ToolCallSlot = { slot: 'name' } | { slot: 'arguments' };

/** How a template writes tool calls. */
export interface ToolCallSyntax {
  /**
   * - `tagged`: each call is `open` + object + `close` (Hermes/Qwen `<tool_call>\n{…}\n</tool_call>`; `close` is
   *   '' when the template shows no matching closing tag);
   * - `list`: `open` starts a JSON array of call objects, `close` ends it (Mistral `[TOOL_CALLS] [{…}]`, a bare `[`);
   * - `json`: one bare call object (Llama 3.x `{"name": …, "parameters": {…}}`, and the fallback when the template
   *   shows no tool-call block).
   */
  family: 'tagged' | 'list' | 'json';
  /** Ollama's tool-call tag (inferToolCallTag), which ToolCallParser looks for; `{` for bare JSON. */
  tag: string;
  /** Literal text before each call (tagged) or before the list (list); '' for json. */
  open: string;
  /** Literal text after each call (tagged) or after the list (list, starts with `]`); '' for json. */
  close: string;
  /** The call object in order: literal texts and the two slots, e.g. `{"name": `, name, `, "arguments": `, args, `}`. */
  object: (string | ToolCallSlot)[];
  /** The key of the arguments in the call object (`arguments`, `parameters`, …). */
  argumentsKey: string;
}

const NAME = '\uE000';
const ARGS = '\uE001';
const OTHER = '\uE002';

/** Field/variable paths an argument mentions (through parenthesised pipes and chains). */
function paths(a: ArgNode, out: string[][]): void {
  if (a.type === 'field' || a.type === 'variable') out.push(a.ident);
  else if (a.type === 'chain') {
    paths(a.node, out);
    out.push(a.field);
  } else if (a.type === 'pipe') for (const c of a.cmds) for (const x of c.args) paths(x, out);
}

/** What an action prints: the call's name, its arguments, or something else. */
function actionSlot(pipe: { cmds: { args: ArgNode[] }[] }): string {
  const found: string[][] = [];
  for (const c of pipe.cmds) for (const a of c.args) paths(a, found);
  if (found.some((p) => p.includes('Arguments'))) return ARGS;
  if (found.some((p) => p[p.length - 1] === 'Name')) return NAME;
  return OTHER;
}

/** The block's text with sentinels for the printed name, arguments and other values; a branch's first list only. */
function flatten(list: ListNode | null): string {
  if (!list) return '';
  let out = '';
  const visit = (n: Node): void => {
    if (n.type === 'text') out += n.text;
    else if (n.type === 'action') out += n.pipe.isAssign || n.pipe.decl.length > 0 ? '' : actionSlot(n.pipe);
    else if (n.type === 'if' || n.type === 'range' || n.type === 'with') n.list.nodes.forEach(visit);
    else if (n.type === 'template') out += OTHER;
  };
  list.nodes.forEach(visit);
  return out;
}

/** The index of the `}` closing the `{` at `start` (JSON-string aware), or -1. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** The call object's parts from its flattened text; undefined unless it has exactly one name and one arguments. */
function objectParts(text: string): (string | ToolCallSlot)[] | undefined {
  if (text.includes(OTHER)) return undefined;
  if (text.split(NAME).length !== 2 || text.split(ARGS).length !== 2) return undefined;
  // The name slot prints a whole JSON string: drop the template's own quotes around `{{ .Function.Name }}`.
  const src = text.replace(`"${NAME}"`, NAME);
  const parts: (string | ToolCallSlot)[] = [];
  let literal = '';
  for (const ch of src) {
    if (ch !== NAME && ch !== ARGS) {
      literal += ch;
      continue;
    }
    if (literal) parts.push(literal);
    literal = '';
    parts.push({ slot: ch === NAME ? 'name' : 'arguments' });
  }
  if (literal) parts.push(literal);
  return parts;
}

/** The default call object `{"name": <name>, "<key>": <arguments>}`. */
function defaultObject(argumentsKey: string): (string | ToolCallSlot)[] {
  return ['{"name": ', { slot: 'name' }, `, ${JSON.stringify(argumentsKey)}: `, { slot: 'arguments' }, '}'];
}

/** The key written before the arguments slot (`"arguments": <args>` → arguments), else a guess from the text. */
function argumentsKeyOf(text: string): string {
  const m = new RegExp(`"([^"]+)"\\s*:\\s*${ARGS}`).exec(text);
  if (m) return m[1];
  return text.includes('"parameters"') ? 'parameters' : 'arguments';
}

/** A closing tag `</x>` matching an opening `<x>` at the start of `open`, with the whitespace before it in `after`. */
function closingTag(open: string, after: string): string {
  const m = /^<([^\s<>/]+)>/.exec(open.trim());
  if (!m) return '';
  const tag = `</${m[1]}>`;
  const at = after.indexOf(tag);
  if (at < 0) return '';
  const before = after.slice(0, at);
  return (before.trim() === '' ? before : '') + tag;
}

/** The closing brackets of the `[`/`{` that `open` leaves open (JSON-string aware), innermost first: `{"a": [` → `]}`. */
function unclosed(open: string): string {
  const stack: string[] = [];
  let inString = false;
  for (let i = 0; i < open.length; i++) {
    const c = open[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') stack.push(c === '[' ? ']' : '}');
    else if ((c === ']' || c === '}') && stack[stack.length - 1] === c) stack.pop();
  }
  return stack.reverse().join('');
}

/**
 * The text closing a list opened by `open`: the template's own text after the last call up to the closing brackets
 * of what `open` left open when it is only whitespace and those brackets (`\n]` for Command R, `]}` for xLAM's
 * `{"tool_calls": [`), else the brackets alone.
 */
function listClose(open: string, after: string): string {
  const closers = unclosed(open) || ']';
  let i = 0;
  for (const c of closers) {
    while (i < after.length && /\s/.test(after[i])) i++;
    if (after[i] !== c) return closers;
    i++;
  }
  return after.slice(0, i);
}

/**
 * Reads the tool-call syntax of a template from its first `{{ if .ToolCalls }}` block: the text before the call
 * object (trimmed at the start) is `open`, the object is the block's JSON object that holds the printed
 * `.Function.Name` and `.Function.Arguments` (its literal text kept as written, spacing included), and what follows
 * gives `close` (a tag matching `open` for tagged calls; for lists, the brackets closing what `open` left open —
 * `]`, or `]}` after xLAM's `{"tool_calls": [` — with the template's whitespace before them). Templates whose block is
 * not of that shape, or that have none, get `{"name": …, "arguments": …}` after Ollama's tag (`{` when none:
 * bare JSON). The result always starts with the tag ToolCallParser looks for (reference §8.5). Pure; never throws.
 * Known gaps: a call object printed through actions (`{{ "{" }}`, Firefunction) or under another name key
 * (`tool_name`, Command R — Ollama's parser then returns the whole object as the arguments) is kept as the template
 * writes it or replaced by the default object; calls inside one shared wrapper (Qwen 3's one `<tool_call>` around
 * several) are written one wrapper per call when parallel.
 */
export function inferToolCallSyntax(t: GoTemplate): ToolCallSyntax {
  const tag = inferToolCallTag(t);
  const block = findToolCallBlock(t);
  const text = block ? flatten(block.list) : '';
  const argumentsKey = argumentsKeyOf(text);
  const fallback = (): ToolCallSyntax => {
    const object = defaultObject(argumentsKey);
    if (tag === '{') return { family: 'json', tag, open: '', close: '', object, argumentsKey };
    if (tag.endsWith('[')) return { family: 'list', tag, open: tag, close: ']', object, argumentsKey };
    return { family: 'tagged', tag, open: `${tag}\n`, close: closingTag(tag, text), object, argumentsKey };
  };
  const first = Math.min(...[text.indexOf(NAME), text.indexOf(ARGS)].filter((i) => i >= 0));
  if (!Number.isFinite(first)) return fallback();
  const start = text.lastIndexOf('{', first);
  const end = start < 0 ? -1 : matchingBrace(text, start);
  const object = end < 0 ? undefined : objectParts(text.slice(start, end + 1));
  if (!object) return fallback();
  const before = text.slice(0, start);
  const open = before.slice(
    Math.max(before.lastIndexOf(NAME), before.lastIndexOf(ARGS), before.lastIndexOf(OTHER)) + 1,
  );
  const after = text.slice(end + 1);
  // A separator printed before every call but the first (`{{ if $i }}, {{ end }}`) is not part of the opening.
  const trimmedOpen = open.trimStart().replace(/,\s*$/, '');
  if (trimmedOpen.trim() === '') {
    return tag === '{' ? { family: 'json', tag, open: '', close: '', object, argumentsKey } : fallback();
  }
  if (!trimmedOpen.startsWith(tag)) return fallback();
  if (trimmedOpen.trimEnd().endsWith('[')) {
    return { family: 'list', tag, open: trimmedOpen, close: listClose(trimmedOpen, after), object, argumentsKey };
  }
  return { family: 'tagged', tag, open: trimmedOpen, close: closingTag(trimmedOpen, after), object, argumentsKey };
}
