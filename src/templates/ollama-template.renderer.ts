/**
 * Prompt rendering with Ollama's template contract: server/prompt.go (image markers) + template/template.go
 * `Template.Execute` (messages-style, legacy prompt/response style, fill-in-the-middle). Reference §8.2.
 */
import { GoTemplate } from './go-template';
import { ActionNode, BranchNode, ListNode, Node, PipeNode, copyNode } from './go-template.nodes';
import { GoStruct, JsonField, goJson, nilSlice, withStringer } from './go-values';
import { templateVars } from './template-inspection';
import { TemplateBudget, renderLimits } from './template-budget';

/** A chat message as handed to the template (Ollama's api.Message). */
export interface TemplateMessage {
  role: string;
  content: string;
  thinking?: string;
  images?: unknown[];
  toolCalls?: { id?: string; function: { index: number; name: string; arguments: Record<string, unknown> } }[];
  toolName?: string;
  toolCallId?: string;
}

/** A tool as handed to the template (Ollama's api.Tool). */
export interface TemplateTool {
  type: string;
  items?: unknown;
  function: {
    name: string;
    description?: string;
    parameters: {
      type: string;
      required?: string[];
      properties: Record<string, unknown>;
      $defs?: unknown;
      items?: unknown;
    };
  };
}

/** What to render: a chat (messages/tools/think) or, with both `prompt` and `suffix`, a FIM request. */
export interface RenderInput {
  messages: TemplateMessage[];
  tools?: TemplateTool[];
  think?: boolean;
  thinkLevel?: string;
  isThinkSet?: boolean;
  suffix?: string;
  /** FIM prompt (used only together with a non-empty `suffix`). */
  prompt?: string;
}

// --- Go data model of Ollama's api types ---

/**
 * Sets a map entry as an own data property: a key named `__proto__` (legal JSON, a tool schema may have such a
 * property) must be an entry, not replace the map's prototype as `m[k] = v` would.
 */
function setEntry<T>(map: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}

/** JSON value → Go value (numbers are float64, objects are maps). */
function jsonToGo(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonToGo);
  if (v && typeof v === 'object' && !(v instanceof GoStruct)) {
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(v)) setEntry(out, k, jsonToGo(e));
    return out;
  }
  if (typeof v === 'bigint') return Number(v);
  return v;
}

function argumentsMap(args: Record<string, unknown> | undefined): Record<string, unknown> {
  const m = (jsonToGo(args ?? {}) as Record<string, unknown>) ?? {};
  return withStringer(m, () => goJson(m), 'api.ToolCallFunctionArguments');
}

function toolCallStruct(tc: NonNullable<TemplateMessage['toolCalls']>[number]): GoStruct {
  const fn = new GoStruct(
    'api.ToolCallFunction',
    {
      Index: BigInt(tc.function.index ?? 0),
      Name: tc.function.name,
      Arguments: argumentsMap(tc.function.arguments),
    },
    {
      json: (): JsonField[] => [
        { key: 'index', value: fn.fields.Index, omitEmpty: true },
        { key: 'name', value: fn.fields.Name },
        { key: 'arguments', value: fn.fields.Arguments },
      ],
    },
  );
  return new GoStruct(
    'api.ToolCall',
    { ID: tc.id ?? '', Function: fn },
    {
      json: (): JsonField[] => [
        { key: 'id', value: tc.id ?? '', omitEmpty: true },
        { key: 'function', value: fn },
      ],
    },
  );
}

/** Builds the `*api.Message` struct a template sees. */
export function messageStruct(m: TemplateMessage): GoStruct {
  const toolCalls = m.toolCalls && m.toolCalls.length > 0 ? m.toolCalls.map(toolCallStruct) : nilSlice<GoStruct>();
  const images = m.images && m.images.length > 0 ? [...m.images] : nilSlice<unknown>();
  const fields = {
    Role: m.role,
    Content: m.content,
    Thinking: m.thinking ?? '',
    Images: images,
    ToolCalls: toolCalls,
    ToolName: m.toolName ?? '',
    ToolCallID: m.toolCallId ?? '',
  };
  return new GoStruct('*api.Message', fields, {
    json: (): JsonField[] => [
      { key: 'role', value: fields.Role },
      { key: 'content', value: fields.Content },
      { key: 'thinking', value: fields.Thinking, omitEmpty: true },
      { key: 'images', value: fields.Images, omitEmpty: true },
      { key: 'tool_calls', value: fields.ToolCalls, omitEmpty: true },
      { key: 'tool_name', value: fields.ToolName, omitEmpty: true },
      { key: 'tool_call_id', value: fields.ToolCallID, omitEmpty: true },
    ],
  });
}

function propertyType(t: unknown): string[] {
  if (Array.isArray(t)) return t.map(String);
  if (typeof t === 'string' && t !== '') return [t];
  return [];
}

function propertyStruct(p: unknown): GoStruct {
  const o = (p && typeof p === 'object' ? p : {}) as Record<string, unknown>;
  const types = propertyType(o.type);
  const typeValue = withStringer(
    [...types],
    () => (types.length === 1 ? types[0] : `[${types.join(' ')}]`),
    'api.PropertyType',
  );
  const anyOf = Array.isArray(o.anyOf) ? o.anyOf.map(propertyStruct) : nilSlice<GoStruct>();
  const props =
    o.properties && typeof o.properties === 'object'
      ? propertiesMap(o.properties as Record<string, unknown>)
      : undefined;
  const fields: Record<string, unknown> = {
    AnyOf: anyOf,
    Type: typeValue,
    Items: jsonToGo(o.items),
    Description: typeof o.description === 'string' ? o.description : '',
    Enum: Array.isArray(o.enum) ? jsonToGo(o.enum) : nilSlice<unknown>(),
    Properties: props,
    Required: Array.isArray(o.required) ? [...o.required] : nilSlice<string>(),
  };
  const s: GoStruct = new GoStruct('api.ToolProperty', fields, {
    json: (): JsonField[] => [
      { key: 'anyOf', value: anyOf, omitEmpty: true },
      { key: 'type', value: types.length === 1 ? types[0] : types, omitEmpty: true },
      { key: 'items', value: fields.Items, omitEmpty: true },
      { key: 'description', value: fields.Description, omitEmpty: true },
      { key: 'enum', value: fields.Enum, omitEmpty: true },
      { key: 'properties', value: props, omitEmpty: true },
      { key: 'required', value: fields.Required, omitEmpty: true },
    ],
    string: () => goJson(s),
  });
  return s;
}

function propertiesMap(props: Record<string, unknown>): Record<string, GoStruct> {
  const m: Record<string, GoStruct> = {};
  for (const [k, v] of Object.entries(props ?? {})) setEntry(m, k, propertyStruct(v));
  return withStringer(m, () => goJson(m), 'map[string]api.ToolProperty');
}

function toolStruct(t: TemplateTool): GoStruct {
  const p = t.function.parameters ?? { type: 'object', properties: {} };
  const params = new GoStruct(
    'api.ToolFunctionParameters',
    {
      Type: p.type ?? '',
      Defs: jsonToGo(p.$defs),
      Items: jsonToGo(p.items),
      Required: Array.isArray(p.required) ? [...p.required] : nilSlice<string>(),
      Properties: propertiesMap(p.properties ?? {}),
    },
    {},
  );
  params.options.json = (): JsonField[] => [
    { key: 'type', value: params.fields.Type },
    { key: '$defs', value: params.fields.Defs, omitEmpty: true },
    { key: 'items', value: params.fields.Items, omitEmpty: true },
    { key: 'required', value: params.fields.Required, omitEmpty: true },
    { key: 'properties', value: params.fields.Properties },
  ];
  params.options.string = (): string => goJson(params);
  const fn = new GoStruct('api.ToolFunction', {
    Name: t.function.name,
    Description: t.function.description ?? '',
    Parameters: params,
  });
  fn.options.json = (): JsonField[] => [
    { key: 'name', value: fn.fields.Name },
    { key: 'description', value: fn.fields.Description, omitEmpty: true },
    { key: 'parameters', value: params },
  ];
  fn.options.string = (): string => goJson(fn);
  const tool = new GoStruct('api.Tool', { Type: t.type, Items: jsonToGo(t.items), Function: fn });
  tool.options.json = (): JsonField[] => [
    { key: 'type', value: t.type },
    { key: 'items', value: tool.fields.Items, omitEmpty: true },
    { key: 'function', value: fn },
  ];
  tool.options.string = (): string => goJson(tool);
  return tool;
}

/** Builds the `api.Tools` value (a slice whose String() is its JSON). */
export function toolsValue(tools: TemplateTool[] | undefined): GoStruct[] {
  const list = tools && tools.length > 0 ? tools.map(toolStruct) : nilSlice<GoStruct>();
  return withStringer(list, () => goJson(list), 'api.Tools');
}

// --- collation and rendering ---

/**
 * Ollama's `collate`: returns all system contents joined by `\n\n`, and the messages with consecutive same-role
 * messages merged (contents joined by `\n\n`), except `tool` messages. System messages stay in the list.
 */
export function collate(msgs: TemplateMessage[]): { system: string; messages: TemplateMessage[] } {
  const system: string[] = [];
  const collated: TemplateMessage[] = [];
  for (const m of msgs) {
    if (m.role === 'system') system.push(m.content);
    const last = collated[collated.length - 1];
    if (last && last.role === m.role && m.role !== 'tool') {
      last.content += '\n\n' + m.content;
      continue;
    }
    collated.push({ ...m });
  }
  return { system: system.join('\n\n'), messages: collated };
}

/**
 * Ollama's image markers (server/prompt.go): each image becomes `[img-N]` (N counts across the request), replacing
 * the next `[img]` in the message, else prefixed to the content.
 */
export function applyImageMarkers(msgs: TemplateMessage[]): TemplateMessage[] {
  let n = 0;
  return msgs.map((m) => {
    if (!m.images || m.images.length === 0) return m;
    let prefix = '';
    let content = m.content;
    for (let i = 0; i < m.images.length; i++) {
      const tag = `[img-${n++}]`;
      if (!content.includes('[img]')) prefix += tag;
      else content = content.replace('[img]', tag);
    }
    return { ...m, content: prefix + content };
  });
}

const RESPONSE_ACTION: ActionNode = {
  type: 'action',
  pos: 0,
  line: 0,
  pipe: {
    type: 'pipe',
    pos: 0,
    line: 0,
    isAssign: false,
    decl: [],
    cmds: [{ type: 'command', pos: 0, args: [{ type: 'field', pos: 0, ident: ['Response'] }] }],
  },
};

/** Root with `{{ .Response }}` appended when the template mentions neither `.Messages` nor `.Response`. */
function effectiveRoot(t: GoTemplate, vars: string[]): ListNode {
  if (vars.includes('messages') || vars.includes('response')) return t.root;
  return { ...t.root, nodes: [...t.root.nodes, RESPONSE_ACTION] };
}

/** Ollama's `deleteNode` walk: everything after the first `.Response` field node is dropped. */
function cutAfterResponse(root: ListNode): ListNode {
  let cut = false;
  const walk = (n: Node): Node | null => {
    if (n.type === 'field' && n.ident.includes('Response')) {
      cut = true;
      return n;
    }
    if (cut) return null;
    if (n.type === 'list') {
      n.nodes = n.nodes.map(walk).filter((c): c is Node => c !== null);
      return n;
    }
    if (n.type === 'if' || n.type === 'range' || n.type === 'with') {
      const b: BranchNode = n;
      b.list = (walk(b.list) as ListNode | null) ?? { type: 'list', pos: b.list.pos, nodes: [] };
      if (b.elseList) b.elseList = walk(b.elseList) as ListNode | null;
      return b;
    }
    if (n.type === 'action') {
      const p = walk(n.pipe);
      if (!p) return null;
      n.pipe = p as PipeNode;
      return n;
    }
    if (n.type === 'pipe') {
      const cmds = [];
      for (const c of n.cmds) {
        const args = c.args.map((a) => walk(a)).filter((a) => a !== null);
        if (args.length === 0) return null;
        c.args = args as typeof c.args;
        cmds.push(c);
      }
      if (cmds.length === 0) return null;
      n.cmds = cmds;
      return n;
    }
    return n;
  };
  return walk(copyNode(root)) as ListNode;
}

/**
 * Renders a prompt like Ollama's `chatPrompt` + `Template.Execute` (reference §8.2):
 * - FIM when both `prompt` and `suffix` are non-empty: `.Prompt`, `.Suffix`, `.Response` "" and the think fields;
 * - messages-style when the template mentions `.Messages`: `.System` (system contents joined by `\n\n`),
 *   `.Messages` (collated), `.Tools`, `.Response` "", `.Think`, `.ThinkLevel`, `.IsThinkSet`;
 * - otherwise legacy style: one execution per completed (system, user, assistant) turn with `.System`, `.Prompt`,
 *   `.Response`, and the last turn executed only up to its `{{ .Response }}`.
 * Images become `[img-N]` markers first. Context-window truncation is the caller's job.
 * All executions of one render share one budget (template-budget.ts), by default sized to the input by renderLimits.
 * @throws TemplateError when execution fails; TemplateBudgetError (`template: execution budget exceeded: …`) when
 *   the render takes more steps or produces more characters than its budget.
 */
export function renderPrompt(
  template: GoTemplate,
  input: RenderInput,
  budget: TemplateBudget = new TemplateBudget(renderLimits(input)),
): string {
  const vars = templateVars(template);
  const root = effectiveRoot(template, vars);
  const think = input.think ?? false;
  const thinkLevel = input.thinkLevel ?? '';
  const isThinkSet = input.isThinkSet ?? false;
  const { system, messages } = collate(applyImageMarkers(input.messages ?? []));

  if (input.prompt && input.suffix) {
    return template.executeRoot(
      root,
      {
        Prompt: input.prompt,
        Suffix: input.suffix,
        Response: '',
        Think: think,
        ThinkLevel: thinkLevel,
        IsThinkSet: isThinkSet,
      },
      budget,
    );
  }
  if (vars.includes('messages')) {
    return template.executeRoot(
      root,
      {
        System: system,
        Messages: messages.map(messageStruct),
        Tools: toolsValue(input.tools),
        Response: '',
        Think: think,
        ThinkLevel: thinkLevel,
        IsThinkSet: isThinkSet,
      },
      budget,
    );
  }

  let out = '';
  let sys = '';
  let prompt = '';
  let response = '';
  const values = (): Record<string, unknown> => ({
    System: sys,
    Prompt: prompt,
    Response: response,
    Think: think,
    ThinkLevel: thinkLevel,
    IsThinkSet: isThinkSet,
  });
  const execute = (): void => {
    out += template.executeRoot(root, values(), budget);
    sys = '';
    prompt = '';
    response = '';
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        if (prompt !== '' || response !== '') execute();
        sys = m.content;
        break;
      case 'user':
        if (response !== '') execute();
        prompt = m.content;
        break;
      case 'assistant':
        response = m.content;
        break;
    }
  }
  out += template.executeRoot(cutAfterResponse(root), values(), budget);
  return out;
}
