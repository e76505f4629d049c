/**
 * Parser for Go `text/template`, mirroring Go's `text/template/parse/parse.go`: builds one tree per template
 * (the main one named by the caller plus one per `{{define}}` / `{{block}}`), keeps variable scoping rules, checks
 * function names at parse time, and reports errors with Go's wording (`template: <name>:<line>: <message>`).
 */
import { Item, ItemType, goQuote, itemString, lex } from './go-template.lexer';
import { goUnquote, LiteralError, numberNode } from './go-template.literals';
import {
  ActionNode,
  ArgNode,
  BranchNode,
  CommandNode,
  ElseNode,
  ListNode,
  Node,
  NumberNode,
  PipeNode,
  TemplateNode,
  VariableNode,
  nodeToString,
} from './go-template.nodes';

export { goUnquote } from './go-template.literals';

/** Raised for any parse or execution error; messages follow Go's `text/template` wording. */
export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

/** A parsed tree: its name and root list. */
export interface Tree {
  name: string;
  root: ListNode;
}

/**
 * Parses `text` into trees, keyed by template name (the main tree under `name`).
 * @param funcs names of the functions that may be called (Go checks these at parse time).
 * @throws TemplateError with Go's message, e.g. `template: :1: function "foo" not defined`.
 */
export function parseTemplate(name: string, text: string, funcs: ReadonlySet<string>): Map<string, Tree> {
  const items = lex(text);
  const treeSet = new Map<string, Tree>();
  const p = new Parser(name, items, funcs, treeSet);
  p.parseMain();
  return treeSet;
}

function isEmptyTree(n: Node): boolean {
  if (n.type === 'list') return n.nodes.every(isEmptyTree);
  if (n.type === 'text') return n.text.trim() === '';
  return n.type === 'comment';
}

class Parser {
  private i = 0;
  private vars: string[] = ['$'];
  private rangeDepth = 0;
  private actionLine = 0;
  private last: Item;
  private treeName: string;

  constructor(
    private readonly parseName: string,
    private readonly items: Item[],
    private readonly funcs: ReadonlySet<string>,
    private readonly treeSet: Map<string, Tree>,
  ) {
    this.treeName = parseName;
    this.last = items[0];
  }

  // --- token stream ---
  private next(): Item {
    const it = this.items[Math.min(this.i, this.items.length - 1)];
    this.i++;
    this.last = it;
    return it;
  }
  private backup(n = 1): void {
    this.i -= n;
  }
  private peek(): Item {
    return this.items[Math.min(this.i, this.items.length - 1)];
  }
  private nextNonSpace(): Item {
    let t: Item;
    do t = this.next();
    while (t.typ === ItemType.Space);
    return t;
  }
  private peekNonSpace(): Item {
    const t = this.nextNonSpace();
    this.backup();
    // re-point "last" consistently with Go (token[0] is the peeked one)
    return t;
  }

  // --- errors ---
  errorf(msg: string): never {
    throw new TemplateError(`template: ${this.parseName}:${this.last.line}: ${msg}`);
  }
  private unexpected(item: Item, context: string): never {
    if (item.typ === ItemType.Error) {
      let extra = '';
      if (this.actionLine !== 0 && this.actionLine !== item.line) {
        extra = ` in action started at ${this.parseName}:${this.actionLine}`;
        if (item.val.endsWith(' action')) extra = extra.slice(' in action'.length);
      }
      this.errorf(`${item.val}${extra}`);
    }
    this.errorf(`unexpected ${itemString(item)} in ${context}`);
  }
  private expect(expected: ItemType, context: string): Item {
    const t = this.nextNonSpace();
    if (t.typ !== expected) this.unexpected(t, context);
    return t;
  }

  // --- top level ---
  parseMain(): void {
    const root: ListNode = { type: 'list', pos: this.peek().pos, nodes: [] };
    while (this.peek().typ !== ItemType.EOF) {
      if (this.peek().typ === ItemType.LeftDelim) {
        this.next();
        if (this.nextNonSpace().typ === ItemType.Define) {
          this.parseDefinition();
          continue;
        }
        // back up to the delimiter (skipping any spaces we consumed)
        while (this.items[this.i - 1].typ !== ItemType.LeftDelim) this.i--;
        this.i--;
      }
      const n = this.textOrAction();
      if (n.type === 'end' || n.type === 'else') this.errorf(`unexpected ${nodeToString(n)}`);
      root.nodes.push(n);
    }
    this.addTree({ name: this.parseName, root });
  }

  private addTree(t: Tree): void {
    const existing = this.treeSet.get(t.name);
    if (!existing || isEmptyTree(existing.root)) {
      this.treeSet.set(t.name, t);
      return;
    }
    if (!isEmptyTree(t.root)) this.errorf(`template: multiple definition of template ${goQuote(t.name)}`);
  }

  private parseDefinition(): void {
    const context = 'define clause';
    const tok = this.nextNonSpace();
    if (tok.typ !== ItemType.String && tok.typ !== ItemType.RawString) this.unexpected(tok, context);
    let name: string;
    try {
      name = goUnquote(tok.val);
    } catch {
      this.errorf('invalid syntax');
    }
    this.expect(ItemType.RightDelim, context);
    const saved = { vars: this.vars, rangeDepth: this.rangeDepth, treeName: this.treeName };
    this.vars = ['$'];
    this.rangeDepth = 0;
    this.treeName = name;
    const [root, end] = this.itemList();
    if (end.type !== 'end') this.errorf(`unexpected ${nodeToString(end)} in ${context}`);
    this.addTree({ name, root });
    this.vars = saved.vars;
    this.rangeDepth = saved.rangeDepth;
    this.treeName = saved.treeName;
  }

  private itemList(): [ListNode, Node] {
    const list: ListNode = { type: 'list', pos: this.peekNonSpace().pos, nodes: [] };
    while (this.peekNonSpace().typ !== ItemType.EOF) {
      const n = this.textOrAction();
      if (n.type === 'end' || n.type === 'else') return [list, n];
      list.nodes.push(n);
    }
    this.next();
    this.errorf('unexpected EOF');
  }

  private textOrAction(): Node {
    const token = this.nextNonSpace();
    const typ: number = token.typ;
    switch (typ) {
      case ItemType.Text:
        return { type: 'text', pos: token.pos, text: token.val };
      case ItemType.LeftDelim: {
        this.actionLine = token.line;
        try {
          return this.action();
        } finally {
          this.actionLine = 0;
        }
      }
      case ItemType.Comment:
        return { type: 'comment', pos: token.pos, text: token.val };
      default:
        this.unexpected(token, 'input');
    }
  }

  private action(): Node {
    const token = this.nextNonSpace();
    const typ: number = token.typ;
    switch (typ) {
      case ItemType.Block:
        return this.blockControl();
      case ItemType.Break:
        return this.breakControl(token, 'break');
      case ItemType.Continue:
        return this.breakControl(token, 'continue');
      case ItemType.Else:
        return this.elseControl();
      case ItemType.End:
        return { type: 'end', pos: this.expect(ItemType.RightDelim, 'end').pos };
      case ItemType.If:
        return this.parseControl('if');
      case ItemType.Range:
        return this.parseControl('range');
      case ItemType.Template:
        return this.templateControl();
      case ItemType.With:
        return this.parseControl('with');
    }
    this.backup();
    const t = this.peek();
    const node: ActionNode = {
      type: 'action',
      pos: t.pos,
      line: t.line,
      pipe: this.pipeline('command', ItemType.RightDelim),
    };
    return node;
  }

  private breakControl(tok: Item, kind: 'break' | 'continue'): Node {
    const t = this.nextNonSpace();
    if (t.typ !== ItemType.RightDelim) this.unexpected(t, `{{${kind}}}`);
    if (this.rangeDepth === 0) this.errorf(`{{${kind}}} outside {{range}}`);
    return { type: kind, pos: tok.pos, line: tok.line };
  }

  private elseControl(): ElseNode {
    const peek = this.peekNonSpace();
    if (peek.typ === ItemType.If || peek.typ === ItemType.With) return { type: 'else', pos: peek.pos, line: peek.line };
    const t = this.expect(ItemType.RightDelim, 'else');
    return { type: 'else', pos: t.pos, line: t.line };
  }

  private parseControl(context: 'if' | 'range' | 'with'): BranchNode {
    const mark = this.vars.length;
    try {
      const pipe = this.pipeline(context, ItemType.RightDelim);
      if (context === 'range') this.rangeDepth++;
      let list: ListNode;
      let next: Node;
      try {
        [list, next] = this.itemList();
      } finally {
        if (context === 'range') this.rangeDepth--;
      }
      let elseList: ListNode | null = null;
      if (next.type === 'else') {
        if (context === 'if' && this.peek().typ === ItemType.If) {
          this.next();
          elseList = { type: 'list', pos: next.pos, nodes: [this.parseControl('if')] };
        } else if (context === 'with' && this.peek().typ === ItemType.With) {
          this.next();
          elseList = { type: 'list', pos: next.pos, nodes: [this.parseControl('with')] };
        } else {
          let n2: Node;
          [elseList, n2] = this.itemList();
          if (n2.type !== 'end') this.errorf(`expected end; found ${nodeToString(n2)}`);
        }
      }
      return { type: context, pos: pipe.pos, line: pipe.line, pipe, list, elseList };
    } finally {
      this.vars.length = mark;
    }
  }

  private parseTemplateName(token: Item, context: string): string {
    if (token.typ === ItemType.String || token.typ === ItemType.RawString) {
      try {
        return goUnquote(token.val);
      } catch {
        this.errorf('invalid syntax');
      }
    }
    this.unexpected(token, context);
  }

  private templateControl(): TemplateNode {
    const context = 'template clause';
    const token = this.nextNonSpace();
    const name = this.parseTemplateName(token, context);
    let pipe: PipeNode | null = null;
    if (this.nextNonSpace().typ !== ItemType.RightDelim) {
      this.backup();
      pipe = this.pipeline(context, ItemType.RightDelim);
    }
    return { type: 'template', pos: token.pos, line: token.line, name, pipe };
  }

  private blockControl(): TemplateNode {
    const context = 'block clause';
    const token = this.nextNonSpace();
    const name = this.parseTemplateName(token, context);
    const pipe = this.pipeline(context, ItemType.RightDelim);
    const saved = { vars: this.vars, rangeDepth: this.rangeDepth };
    this.vars = ['$'];
    this.rangeDepth = 0;
    const [root, end] = this.itemList();
    if (end.type !== 'end') this.errorf(`unexpected ${nodeToString(end)} in ${context}`);
    this.addTree({ name, root });
    this.vars = saved.vars;
    this.rangeDepth = saved.rangeDepth;
    return { type: 'template', pos: token.pos, line: token.line, name, pipe };
  }

  private pipeline(context: string, end: ItemType): PipeNode {
    const token = this.peekNonSpace();
    const pipe: PipeNode = { type: 'pipe', pos: token.pos, line: token.line, isAssign: false, decl: [], cmds: [] };
    decls: for (;;) {
      const v = this.peekNonSpace();
      if (v.typ !== ItemType.Variable) break;
      const before = this.i;
      this.nextNonSpace();
      const tokenAfterVariable = this.peek();
      const next = this.peekNonSpace();
      if (next.typ === ItemType.Assign || next.typ === ItemType.Declare) {
        pipe.isAssign = next.typ === ItemType.Assign;
        this.nextNonSpace();
        pipe.decl.push(this.newVariable(v));
        this.vars.push(v.val);
      } else if (next.typ === ItemType.Char && next.val === ',') {
        this.nextNonSpace();
        pipe.decl.push(this.newVariable(v));
        this.vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          const pk = this.peekNonSpace().typ;
          if (pk === ItemType.Variable || pk === ItemType.RightDelim || pk === ItemType.RightParen) continue decls;
          this.errorf('range can only initialize variables');
        }
        this.errorf(`too many declarations in ${context}`);
      } else {
        void tokenAfterVariable;
        this.i = before;
      }
      break;
    }
    for (;;) {
      const t = this.nextNonSpace();
      const typ: number = t.typ;
      switch (typ) {
        case end:
          this.checkPipeline(pipe, context);
          return pipe;
        case ItemType.Bool:
        case ItemType.CharConstant:
        case ItemType.Complex:
        case ItemType.Dot:
        case ItemType.Field:
        case ItemType.Identifier:
        case ItemType.Number:
        case ItemType.Nil:
        case ItemType.RawString:
        case ItemType.String:
        case ItemType.Variable:
        case ItemType.LeftParen:
          this.backup();
          pipe.cmds.push(this.command());
          break;
        default:
          this.unexpected(t, context);
      }
    }
  }

  private checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) this.errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      const t = c.args[0].type;
      if (t === 'bool' || t === 'dot' || t === 'nil' || t === 'number' || t === 'string') {
        this.errorf(`non executable command in pipeline stage ${i + 2}`);
      }
    });
  }

  private command(): CommandNode {
    const cmd: CommandNode = { type: 'command', pos: this.peekNonSpace().pos, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand) cmd.args.push(operand);
      const t = this.next();
      if (t.typ === ItemType.Space) continue;
      if (t.typ === ItemType.RightDelim || t.typ === ItemType.RightParen) this.backup();
      else if (t.typ !== ItemType.Pipe) this.unexpected(t, 'operand');
      break;
    }
    if (cmd.args.length === 0) this.errorf('empty command');
    return cmd;
  }

  private operand(): ArgNode | null {
    let node = this.term();
    if (!node) return null;
    if (this.peek().typ === ItemType.Field) {
      const pos = this.peek().pos;
      const fields: string[] = [];
      while (this.peek().typ === ItemType.Field) fields.push(this.next().val.slice(1));
      if (node.type === 'field') {
        node = { type: 'field', pos: node.pos, ident: [...node.ident, ...fields] };
      } else if (node.type === 'variable') {
        node = { type: 'variable', pos: node.pos, ident: [...node.ident, ...fields] };
      } else if (['bool', 'string', 'number', 'nil', 'dot'].includes(node.type)) {
        this.errorf(`unexpected . after term ${goQuote(nodeToString(node))}`);
      } else {
        node = { type: 'chain', pos, node, field: fields };
      }
    }
    return node;
  }

  private term(): ArgNode | null {
    const token = this.nextNonSpace();
    const typ: number = token.typ;
    switch (typ) {
      case ItemType.Identifier:
        if (!this.funcs.has(token.val)) this.errorf(`function ${goQuote(token.val)} not defined`);
        return { type: 'identifier', pos: token.pos, name: token.val };
      case ItemType.Dot:
        return { type: 'dot', pos: token.pos };
      case ItemType.Nil:
        return { type: 'nil', pos: token.pos };
      case ItemType.Variable:
        return this.useVar(token);
      case ItemType.Field:
        return { type: 'field', pos: token.pos, ident: token.val.slice(1).split('.') };
      case ItemType.Bool:
        return { type: 'bool', pos: token.pos, value: token.val === 'true' };
      case ItemType.CharConstant:
      case ItemType.Complex:
      case ItemType.Number:
        return this.newNumber(token);
      case ItemType.LeftParen:
        return this.pipeline('parenthesized pipeline', ItemType.RightParen);
      case ItemType.String:
      case ItemType.RawString:
        try {
          return { type: 'string', pos: token.pos, quoted: token.val, text: goUnquote(token.val) };
        } catch {
          this.errorf('invalid syntax');
        }
    }
    this.backup();
    return null;
  }

  private newVariable(t: Item): VariableNode {
    return { type: 'variable', pos: t.pos, ident: t.val.split('.') };
  }

  private useVar(t: Item): VariableNode {
    const v = this.newVariable(t);
    if (this.vars.includes(v.ident[0])) return v;
    this.errorf(`undefined variable ${goQuote(v.ident[0])}`);
  }

  private newNumber(t: Item): NumberNode {
    try {
      return numberNode(t);
    } catch (err) {
      if (err instanceof LiteralError) this.errorf(err.message);
      throw err;
    }
  }
}
