/**
 * Executor for parsed Go `text/template` trees, mirroring Go's `text/template/exec.go` and `funcs.go` with the
 * `missingkey=zero` option: missing map keys yield nil (printed `<no value>`), unknown struct fields are errors,
 * variables are scoped to the enclosing control structure, `{{template}}` calls get no variables but `$`. The builtin
 * functions are in go-template.builtins.ts. Every execution runs under a {@link TemplateBudget} (template-budget.ts):
 * steps (nodes, range iterations, template calls, function calls weighted by the size of their arguments and result)
 * and produced characters are counted, and the render stops with TemplateBudgetError when one passes its limit.
 */
import {
  ArgNode,
  BranchNode,
  ChainNode,
  CommandNode,
  FieldNode,
  IdentifierNode,
  ListNode,
  Node,
  PipeNode,
  TemplateNode,
  VariableNode,
  nodeToString,
} from './go-template.nodes';
import { TemplateError, Tree } from './go-template.parser';
import { goQuote } from './go-template.lexer';
import type { GoFunc } from './go-template.builtins';
import { GoStruct, goTypeName, isTrue, kindOf, formatValue } from './go-values';
import { TemplateBudget } from './template-budget';

export { BUILTINS, FuncError, htmlEscape, jsEscape, urlQueryEscape } from './go-template.builtins';
export type { GoFunc } from './go-template.builtins';

const MISSING = Symbol('missing');
/** How a walked node ends: normally, or with `{{break}}` / `{{continue}}` (returned up to the enclosing range). */
type Flow = 0 | 1 | 2;
const NEXT: Flow = 0;
const BREAK: Flow = 1;
const CONTINUE: Flow = 2;
const MAX_EXEC_DEPTH = 100000;

interface Variable {
  name: string;
  value: unknown;
}

function indirect(v: unknown): unknown {
  return v;
}

class State {
  vars: Variable[];
  node: Node | null = null;
  out: string[] = [];
  depth = 0;

  constructor(
    readonly text: string,
    readonly treeName: string,
    readonly trees: ReadonlyMap<string, Tree>,
    readonly funcs: Readonly<Record<string, GoFunc>>,
    data: unknown,
    readonly budget: TemplateBudget,
  ) {
    this.vars = [{ name: '$', value: data }];
  }

  errorf(msg: string): never {
    const name = this.treeName;
    if (!this.node) throw new TemplateError(`template: ${name}: ${msg}`);
    const pos = 'pos' in this.node ? this.node.pos : 0;
    const before = this.text.slice(0, pos);
    const nl = before.lastIndexOf('\n');
    const col = nl === -1 ? pos : pos - nl - 1;
    const lineNum = 1 + (before.match(/\n/g)?.length ?? 0);
    let context = nodeToString(this.node);
    if ([...context].length > 20) context = [...context].slice(0, 20).join('') + '...';
    throw new TemplateError(`template: ${name}:${lineNum}:${col}: executing ${goQuote(name)} at <${context}>: ${msg}`);
  }

  at(n: Node): void {
    this.node = n;
  }

  push(name: string, value: unknown): void {
    this.vars.push({ name, value });
  }

  mark(): number {
    return this.vars.length;
  }

  pop(mark: number): void {
    this.vars.length = mark;
  }

  setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i].name === name) {
        this.vars[i].value = value;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }

  setTopVar(n: number, value: unknown): void {
    this.vars[this.vars.length - n].value = value;
  }

  varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i].name === name) return this.vars[i].value;
    this.errorf(`undefined variable: ${name}`);
  }

  /** Walks one node; `{{break}}` / `{{continue}}` are returned (not thrown: a throw per iteration is slow). */
  walk(dot: unknown, node: Node): Flow {
    this.at(node);
    this.budget.step();
    switch (node.type) {
      case 'action': {
        const val = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) this.printValue(node, val);
        return NEXT;
      }
      case 'break':
        return BREAK;
      case 'continue':
        return CONTINUE;
      case 'comment':
        return NEXT;
      case 'if':
      case 'with':
        return this.walkIfOrWith(dot, node);
      case 'list':
        for (const n of node.nodes) {
          const flow = this.walk(dot, n);
          if (flow !== NEXT) return flow;
        }
        return NEXT;
      case 'range':
        return this.walkRange(dot, node);
      case 'template':
        this.walkTemplate(dot, node);
        return NEXT;
      case 'text':
        this.budget.produce(node.text.length);
        this.out.push(node.text);
        return NEXT;
      case 'string':
      case 'number':
      case 'bool':
      case 'end':
      case 'else':
      case 'field':
      case 'variable':
      case 'identifier':
      case 'dot':
      case 'nil':
      case 'chain':
      case 'pipe':
      case 'command':
        this.errorf(`unknown node: ${nodeToString(node)}`);
    }
  }

  // An error ends the whole execution (templates cannot recover), so variable scopes are popped without `finally`.
  walkIfOrWith(dot: unknown, node: BranchNode): Flow {
    const mark = this.mark();
    const val = this.evalPipeline(dot, node.pipe);
    let flow = NEXT;
    if (isTrue(val)) flow = this.walk(node.type === 'with' ? val : dot, node.list);
    else if (node.elseList) flow = this.walk(dot, node.elseList);
    this.pop(mark);
    return flow;
  }

  /** Runs a range; returns the flow of its `{{else}}` list (a break there belongs to an enclosing range). */
  walkRange(dot: unknown, r: BranchNode): Flow {
    this.at(r);
    const outer = this.mark();
    let flow = NEXT;
    const val = indirect(this.evalPipeline(dot, r.pipe));
    const mark = this.mark();
    const decl = r.pipe.decl;
    /** Runs one iteration; true when it ended with `{{break}}`. */
    const oneIteration = (index: unknown, elem: unknown): boolean => {
      if (decl.length > 0) {
        if (r.pipe.isAssign) {
          this.setVar(decl[0].ident[0], decl.length > 1 ? index : elem);
        } else {
          this.setTopVar(1, elem);
        }
      }
      if (decl.length > 1) {
        if (r.pipe.isAssign) this.setVar(decl[1].ident[0], elem);
        else this.setTopVar(2, index);
      }
      this.budget.step();
      const flow = this.walk(elem, r.list);
      this.pop(mark);
      return flow === BREAK;
    };
    let iterated = false;
    loop: {
      switch (kindOf(val)) {
        case 'slice': {
          // No copy (Go ranges over the slice header): a loop that breaks at once costs one step, not the length.
          const arr = val as ArrayLike<unknown>;
          const bytes = val instanceof Uint8Array;
          for (let i = 0; i < arr.length; i++) {
            iterated = true;
            if (oneIteration(BigInt(i), bytes ? BigInt(arr[i] as number) : arr[i])) break loop;
          }
          break;
        }
        case 'map': {
          const entries = this.budget.mapEntries(val as object);
          for (const [k, v] of entries) {
            iterated = true;
            if (oneIteration(k, v)) break loop;
          }
          break;
        }
        case 'int': {
          if (decl.length > 1) this.errorf(`can't use ${formatValue(val)} to iterate over more than one variable`);
          const n = val as bigint;
          for (let i = 0n; i < n; i++) {
            iterated = true;
            if (oneIteration(i, i)) break loop;
          }
          break;
        }
        case 'invalid':
          break;
        case 'string':
        case 'bool':
        case 'float':
        case 'struct':
        case 'func':
          this.errorf(`range can't iterate over ${formatValue(val)}`);
      }
      if (!iterated && r.elseList) flow = this.walk(dot, r.elseList);
    }
    this.pop(outer);
    return flow;
  }

  walkTemplate(dot: unknown, t: TemplateNode): void {
    this.at(t);
    const tree = this.trees.get(t.name);
    if (!tree) this.errorf(`template ${goQuote(t.name)} not defined`);
    if (this.depth >= MAX_EXEC_DEPTH) this.errorf(`exceeded maximum template depth (${MAX_EXEC_DEPTH})`);
    this.budget.step();
    const newDot = this.evalPipeline(dot, t.pipe);
    const saved = { vars: this.vars, treeName: (this as { treeName: string }).treeName };
    this.vars = [{ name: '$', value: newDot }];
    this.depth++;
    try {
      this.walk(newDot, tree.root);
    } finally {
      this.depth--;
      this.vars = saved.vars;
    }
  }

  evalPipeline(dot: unknown, pipe: PipeNode | null): unknown {
    if (!pipe) return undefined;
    this.at(pipe);
    let value: unknown = MISSING;
    for (const cmd of pipe.cmds) value = this.evalCommand(dot, cmd, value);
    if (value === MISSING) value = undefined;
    for (const v of pipe.decl) {
      if (pipe.isAssign) this.setVar(v.ident[0], value);
      else this.push(v.ident[0], value);
    }
    return value;
  }

  notAFunction(args: ArgNode[], final: unknown): void {
    if (args.length > 1 || final !== MISSING) {
      this.errorf(`can't give argument to non-function ${nodeToString(args[0])}`);
    }
  }

  evalCommand(dot: unknown, cmd: CommandNode, final: unknown): unknown {
    const first = cmd.args[0];
    switch (first.type) {
      case 'field':
        return this.evalFieldNode(dot, first, cmd.args, final);
      case 'chain':
        return this.evalChainNode(dot, first, cmd.args, final);
      case 'identifier':
        return this.evalFunction(dot, first, cmd.args, final);
      case 'pipe':
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first);
      case 'variable':
        return this.evalVariableNode(dot, first, cmd.args, final);
      case 'string':
      case 'number':
      case 'bool':
      case 'dot':
      case 'nil':
        break;
    }
    this.at(first);
    this.notAFunction(cmd.args, final);
    switch (first.type) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        this.errorf('nil is not a command');
      case 'number':
        return first.value;
      case 'string':
        return first.text;
    }
  }

  evalFieldNode(dot: unknown, field: FieldNode, args: ArgNode[], final: unknown): unknown {
    this.at(field);
    return this.evalFieldChain(dot, dot, field, field.ident, args, final);
  }

  evalChainNode(dot: unknown, chain: ChainNode, args: ArgNode[], final: unknown): unknown {
    this.at(chain);
    if (chain.node.type === 'nil') this.errorf(`indirection through explicit nil in ${nodeToString(chain)}`);
    const pipe = this.evalArg(dot, chain.node);
    return this.evalFieldChain(dot, pipe, chain, chain.field, args, final);
  }

  evalVariableNode(dot: unknown, v: VariableNode, args: ArgNode[], final: unknown): unknown {
    this.at(v);
    const value = this.varValue(v.ident[0]);
    if (v.ident.length === 1) {
      this.notAFunction(args, final);
      return value;
    }
    return this.evalFieldChain(dot, value, v, v.ident.slice(1), args, final);
  }

  evalFieldChain(
    dot: unknown,
    receiver: unknown,
    node: Node,
    ident: string[],
    args: ArgNode[],
    final: unknown,
  ): unknown {
    const n = ident.length;
    for (let i = 0; i < n - 1; i++) receiver = this.evalField(ident[i], node, [], MISSING, receiver);
    return this.evalField(ident[n - 1], node, args, final, receiver);
  }

  evalField(fieldName: string, node: Node, args: ArgNode[], final: unknown, receiver: unknown): unknown {
    if (receiver === null || receiver === undefined) return undefined;
    const hasArgs = args.length > 1 || final !== MISSING;
    const k = kindOf(receiver);
    if (k === 'struct') {
      const s = receiver as GoStruct;
      if (Object.prototype.hasOwnProperty.call(s.fields, fieldName)) {
        if (hasArgs) this.errorf(`${fieldName} has arguments but cannot be invoked as function`);
        return s.fields[fieldName];
      }
    } else if (k === 'map') {
      if (hasArgs) this.errorf(`${fieldName} is not a method but has arguments`);
      if (receiver instanceof Map) return receiver.get(fieldName);
      return Object.prototype.hasOwnProperty.call(receiver, fieldName)
        ? (receiver as Record<string, unknown>)[fieldName]
        : undefined;
    }
    void node;
    this.errorf(`can't evaluate field ${fieldName} in type ${goTypeName(receiver)}`);
  }

  evalFunction(dot: unknown, node: IdentifierNode, args: ArgNode[], final: unknown): unknown {
    this.at(node);
    const name = node.name;
    const f = this.funcs[name];
    if (!f) this.errorf(`${goQuote(name)} is not a defined function`);
    return this.evalCall(dot, f, node, name, args, final);
  }

  evalCall(dot: unknown, f: GoFunc, node: Node, name: string, args: ArgNode[], final: unknown): unknown {
    const argNodes = args.slice(1);
    const numIn = argNodes.length + (final !== MISSING ? 1 : 0);
    if (f.variadic) {
      if (numIn < f.fixed) this.errorf(`wrong number of args for ${name}: want at least ${f.fixed} got ${numIn}`);
    } else if (numIn !== f.fixed) {
      this.errorf(`wrong number of args for ${name}: want ${f.fixed} got ${numIn}`);
    }
    this.budget.step();
    if (f === this.funcs.and || f === this.funcs.or) {
      const isOr = name === 'or';
      let v: unknown;
      for (const a of argNodes) {
        v = this.evalArg(dot, a);
        if (isTrue(v) === isOr) return v;
      }
      if (final !== MISSING) v = final;
      return v;
    }
    const argv: unknown[] = argNodes.map((a) => this.evalArg(dot, a));
    if (final !== MISSING) argv.push(final);
    if (f.stringParams) {
      argv.forEach((a, i) => {
        const typed = f.stringParams!.includes(i) || (f.variadic && i >= f.fixed && f.stringParams!.includes(f.fixed));
        if (!typed) return;
        if (a === null || a === undefined) this.errorf('invalid value; expected string');
        if (typeof a !== 'string') this.errorf(`wrong type for value; expected string; got ${goTypeName(a)}`);
      });
    }
    this.at(node);
    this.budget.callArgs(argv);
    let result: unknown;
    try {
      result = f.fn(...argv);
    } catch (e) {
      if (e instanceof TemplateError) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      this.errorf(`error calling ${name}: ${msg}`);
    }
    this.budget.callResult(result);
    return result;
  }

  evalArg(dot: unknown, n: ArgNode): unknown {
    this.at(n);
    switch (n.type) {
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'field':
        return this.evalFieldNode(dot, n, [n], MISSING);
      case 'variable':
        return this.evalVariableNode(dot, n, [], MISSING);
      case 'pipe':
        return this.evalPipeline(dot, n);
      case 'identifier':
        return this.evalFunction(dot, n, [n], MISSING);
      case 'chain':
        return this.evalChainNode(dot, n, [], MISSING);
      case 'bool':
        return n.value;
      case 'number':
        return n.value;
      case 'string':
        return n.text;
    }
  }

  printValue(n: Node, v: unknown): void {
    this.at(n);
    if (v === null || v === undefined) {
      this.budget.produce(10);
      this.out.push('<no value>');
      return;
    }
    if (typeof v === 'function') this.errorf(`can't print ${nodeToString(n)} of type ${goTypeName(v)}`);
    const text = formatValue(v);
    this.budget.produce(text.length);
    this.out.push(text);
  }
}

/**
 * Executes tree `name` of `trees` with `data` as dot and `$`.
 * @param text the template source (for error positions).
 * @param budget the render's budget (shared by all executions of one render); default: a fresh one with
 *   DEFAULT_TEMPLATE_LIMITS.
 * @throws TemplateError `template: <name>:<line>:<col>: executing "<name>" at <<node>>: <message>`;
 *   TemplateBudgetError `template: execution budget exceeded: …` when the budget runs out.
 */
export function executeTree(
  text: string,
  name: string,
  root: ListNode,
  trees: ReadonlyMap<string, Tree>,
  funcs: Readonly<Record<string, GoFunc>>,
  data: unknown,
  budget: TemplateBudget = new TemplateBudget(),
): string {
  const s = new State(text, name, trees, funcs, data, budget);
  try {
    s.walk(data, root);
  } catch (e) {
    if (e instanceof RangeError && /call stack/i.test(e.message)) {
      s.errorf(`exceeded maximum template depth (${MAX_EXEC_DEPTH})`);
    }
    throw e;
  }
  return s.out.join('');
}
