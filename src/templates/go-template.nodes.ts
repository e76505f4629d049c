/** Parse-tree node shapes for Go `text/template`, mirroring `text/template/parse/node.go`. */

export interface ListNode {
  type: 'list';
  pos: number;
  nodes: Node[];
}
export interface TextNode {
  type: 'text';
  pos: number;
  text: string;
}
export interface CommentNode {
  type: 'comment';
  pos: number;
  text: string;
}
export interface ActionNode {
  type: 'action';
  pos: number;
  line: number;
  pipe: PipeNode;
}
export interface PipeNode {
  type: 'pipe';
  pos: number;
  line: number;
  isAssign: boolean;
  decl: VariableNode[];
  cmds: CommandNode[];
}
export interface CommandNode {
  type: 'command';
  pos: number;
  args: ArgNode[];
}
export interface FieldNode {
  type: 'field';
  pos: number;
  ident: string[];
}
export interface VariableNode {
  type: 'variable';
  pos: number;
  ident: string[];
}
export interface IdentifierNode {
  type: 'identifier';
  pos: number;
  name: string;
}
export interface DotNode {
  type: 'dot';
  pos: number;
}
export interface NilNode {
  type: 'nil';
  pos: number;
}
export interface BoolNode {
  type: 'bool';
  pos: number;
  value: boolean;
}
export interface NumberNode {
  type: 'number';
  pos: number;
  text: string;
  /** bigint for Go int constants, number for float constants. */
  value: bigint | number;
}
export interface StringNode {
  type: 'string';
  pos: number;
  quoted: string;
  text: string;
}
export interface ChainNode {
  type: 'chain';
  pos: number;
  node: ArgNode;
  field: string[];
}
export interface BranchNode {
  type: 'if' | 'range' | 'with';
  pos: number;
  line: number;
  pipe: PipeNode;
  list: ListNode;
  elseList: ListNode | null;
}
export interface TemplateNode {
  type: 'template';
  pos: number;
  line: number;
  name: string;
  pipe: PipeNode | null;
}
export interface BreakNode {
  type: 'break';
  pos: number;
  line: number;
}
export interface ContinueNode {
  type: 'continue';
  pos: number;
  line: number;
}
/** Internal markers returned by the parser for `{{end}}` / `{{else}}`; never part of a finished tree. */
export interface EndNode {
  type: 'end';
  pos: number;
}
export interface ElseNode {
  type: 'else';
  pos: number;
  line: number;
}

export type ArgNode =
  | FieldNode
  | VariableNode
  | IdentifierNode
  | DotNode
  | NilNode
  | BoolNode
  | NumberNode
  | StringNode
  | ChainNode
  | PipeNode;

export type Node =
  | ListNode
  | TextNode
  | CommentNode
  | ActionNode
  | BranchNode
  | TemplateNode
  | BreakNode
  | ContinueNode
  | EndNode
  | ElseNode
  | ArgNode
  | CommandNode;

/** Go's `Node.String()`: the node printed back as template source (used in error contexts). */
export function nodeToString(n: Node): string {
  switch (n.type) {
    case 'list':
      return n.nodes.map(nodeToString).join('');
    case 'text':
      return n.text;
    case 'comment':
      return `{{${n.text}}}`;
    case 'action':
      return `{{${nodeToString(n.pipe)}}}`;
    case 'pipe': {
      let s = '';
      if (n.decl.length > 0) {
        s = n.decl.map(nodeToString).join(', ') + (n.isAssign ? ' = ' : ' := ');
      }
      return s + n.cmds.map(nodeToString).join(' | ');
    }
    case 'command':
      return n.args.map((a) => (a.type === 'pipe' ? `(${nodeToString(a)})` : nodeToString(a))).join(' ');
    case 'field':
      return n.ident.map((i) => '.' + i).join('');
    case 'variable':
      return n.ident.join('.');
    case 'identifier':
      return n.name;
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'bool':
      return n.value ? 'true' : 'false';
    case 'number':
      return n.text;
    case 'string':
      return n.quoted;
    case 'chain': {
      const inner = n.node.type === 'pipe' ? `(${nodeToString(n.node)})` : nodeToString(n.node);
      return inner + n.field.map((f) => '.' + f).join('');
    }
    case 'if':
    case 'range':
    case 'with': {
      let s = `{{${n.type} ${nodeToString(n.pipe)}}}${nodeToString(n.list)}`;
      if (n.elseList) s += `{{else}}${nodeToString(n.elseList)}`;
      return s + '{{end}}';
    }
    case 'template':
      return n.pipe
        ? `{{template ${JSON.stringify(n.name)} ${nodeToString(n.pipe)}}}`
        : `{{template ${JSON.stringify(n.name)}}}`;
    case 'break':
      return '{{break}}';
    case 'continue':
      return '{{continue}}';
    case 'end':
      return '{{end}}';
    case 'else':
      return '{{else}}';
  }
}

/** Deep copy of a node (Go's `Node.Copy()`). */
export function copyNode<T extends Node>(n: T): T {
  return structuredClone(n);
}
