/**
 * Template introspection as Ollama does it: `Template.Vars()` (template/template.go), tool-call tag inference
 * (tools/template.go `parseTag`), thinking-tag inference (thinking/template.go `InferTags`) and capability
 * derivation (server/images.go `Capabilities`).
 */
import { GoTemplate } from './go-template';
import { BranchNode, ListNode, Node, TextNode } from './go-template.nodes';

function identifiers(n: Node | null, out: string[]): void {
  if (!n) return;
  if (n.type === 'list') {
    n.nodes.forEach((c) => identifiers(c, out));
  } else if (n.type === 'template' || n.type === 'action') {
    identifiers(n.pipe, out);
  } else if (n.type === 'if' || n.type === 'range' || n.type === 'with') {
    identifiers(n.pipe, out);
    identifiers(n.list, out);
    identifiers(n.elseList, out);
  } else if (n.type === 'pipe') {
    for (const c of n.cmds) for (const a of c.args) identifiers(a, out);
  } else if (n.type === 'field' || n.type === 'variable') {
    out.push(...n.ident);
  }
}

/**
 * Ollama's `Template.Vars()`: the lower-cased, sorted, de-duplicated identifiers (field and variable name parts) used
 * anywhere in the template and its `{{define}}`d templates.
 */
export function templateVars(t: GoTemplate): string[] {
  const out: string[] = [];
  for (const tree of t.trees.values()) identifiers(tree.root, out);
  return [...new Set(out.map((s) => s.toLowerCase()))].sort();
}

/** Ollama's template capabilities (reference §8.7): `.Tools` ⇒ tools, `.Suffix` ⇒ insert, inferred thinking tags. */
export function templateCapabilities(t: GoTemplate): { tools: boolean; insert: boolean; thinking: boolean } {
  const vars = templateVars(t);
  return { tools: vars.includes('tools'), insert: vars.includes('suffix'), thinking: inferThinkingTags(t) !== null };
}

/**
 * Ollama's Jinja capability sniffing (reference §8.1): `tools`/`tool_call` substrings ⇒ tools; `<think>` and
 * `</think>`, or the `.split('</think>')` idiom ⇒ thinking.
 */
export function jinjaCapabilities(jinja: string): { tools: boolean; thinking: boolean } {
  const tools = jinja.includes('tools') || jinja.includes('tool_call');
  const thinking =
    (jinja.includes('<think>') && jinja.includes('</think>')) || /\.split\(\s*['"]<\/think>['"]\s*\)/.test(jinja);
  return { tools, thinking };
}

// --- tool-call tag (tools/template.go) ---

function isToolCallsIf(n: BranchNode): boolean {
  return n.pipe.cmds.some((c) => c.args.some((a) => a.type === 'field' && a.ident.includes('ToolCalls')));
}

function findToolCallNode(nodes: Node[]): BranchNode | null {
  for (const n of nodes) {
    if (n.type === 'if' && isToolCallsIf(n)) return n;
    if (n.type === 'if' || n.type === 'range' || n.type === 'with') {
      const r = findToolCallNode(n.list.nodes) ?? (n.elseList ? findToolCallNode(n.elseList.nodes) : null);
      if (r) return r;
    }
  }
  return null;
}

function findTextNode(nodes: Node[]): TextNode | null {
  for (const n of nodes) {
    if (n.type === 'text') {
      if (n.text.trim() === '') continue;
      return n;
    }
    if (n.type === 'if' || n.type === 'range' || n.type === 'with') {
      return findTextNode(n.list.nodes) ?? (n.elseList ? findTextNode(n.elseList.nodes) : null);
    }
  }
  return null;
}

/**
 * The first `{{ if .ToolCalls }}` node of a template (searched through nested if/range/with, else branches
 * included), as Ollama's tools/template.go finds it (reference §8.5); null when the template has none.
 */
export function findToolCallBlock(t: GoTemplate): BranchNode | null {
  return findToolCallNode(t.root.nodes);
}

/**
 * Ollama's tool-call tag inference (reference §8.5): the first non-blank text inside the first `{{ if .ToolCalls }}`
 * block (searched through nested if/range/with), cut at the first `{`, trimmed; `{` when none is found.
 */
export function inferToolCallTag(t: GoTemplate): string {
  const tc = findToolCallBlock(t);
  if (!tc) return '{';
  const tn = findTextNode(tc.list.nodes);
  if (!tn) return '{';
  let tag = tn.text.replace(/\r\n/g, '\n');
  const brace = tag.indexOf('{');
  if (brace >= 0) tag = tag.slice(0, brace);
  tag = tag.trim();
  return tag === '' ? '{' : tag;
}

// --- thinking tags (thinking/template.go) ---

function rangeUsesField(r: BranchNode, field: string): boolean {
  for (const c of r.pipe.cmds) {
    for (const a of c.args) {
      if (a.type === 'field' && a.ident[0] === field) return true;
      if (a.type === 'variable' && a.ident.slice(1).includes(field)) return true;
    }
  }
  return false;
}

/**
 * Ollama's thinking-tag inference (reference §8.6): for each `.Thinking` field used (in an action, not an `if`
 * condition) inside a `range` over `.Messages`, the nearest enclosing list's first and last text nodes (trimmed) are
 * the opening and closing tags; the last such reference wins. Returns null unless both tags are non-empty.
 */
export function inferThinkingTags(t: GoTemplate): { open: string; close: string } | null {
  let open = '';
  let close = '';
  const ancestors: Node[] = [];
  const visit = (n: Node | null): void => {
    if (!n) return;
    ancestors.push(n);
    if (n.type === 'field' && n.ident[0] === 'Thinking') {
      let range: BranchNode | null = null;
      for (let i = ancestors.length - 1; i >= 0; i--) {
        const a = ancestors[i];
        if (a.type === 'range') {
          range = a;
          break;
        }
      }
      if (range && rangeUsesField(range, 'Messages')) {
        for (let i = ancestors.length - 1; i >= 0; i--) {
          const l = ancestors[i];
          if (l.type === 'list') {
            const first = (l as ListNode).nodes[0];
            const last = (l as ListNode).nodes[(l as ListNode).nodes.length - 1];
            if (first?.type === 'text') open = first.text.trim();
            if (last?.type === 'text') close = last.text.trim();
            break;
          }
        }
      }
    }
    if (n.type === 'list') {
      n.nodes.forEach(visit);
    } else if (n.type === 'if' || n.type === 'range' || n.type === 'with') {
      // Go visits the branch's lists but not its pipeline
      visit(n.list);
      visit(n.elseList);
    } else if (n.type === 'action' || n.type === 'template') {
      visit(n.pipe);
    } else if (n.type === 'pipe') {
      n.cmds.forEach(visit);
    } else if (n.type === 'command') {
      n.args.forEach(visit);
    }
    ancestors.pop();
  };
  visit(t.root);
  return open !== '' && close !== '' ? { open, close } : null;
}
