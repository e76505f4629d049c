import { InvalidRequestError } from '../common/errors';

/**
 * Modelfile parser: a port of the state machine in Ollama's `parser/parser.go` (reference/ollama-api.md §10.5).
 *
 * Grammar: one command per line, `COMMAND <value>`; commands are case-insensitive words of letters; `#` starts a
 * comment line; values are unquoted (to the end of the line, trimmed), `"…"` (may span lines) or `"""…"""`
 * (multi-line); quotes are stripped and no escapes are processed. `PARAMETER <name> <value>` and
 * `MESSAGE <role> <value>` take a second word.
 */

/** Command names as stored after parsing (`FROM` becomes `model`, like Ollama). */
export type ModelfileCommandName =
  | 'model'
  | 'license'
  | 'template'
  | 'system'
  | 'adapter'
  | 'draft'
  | 'renderer'
  | 'parser'
  | 'requires'
  | 'message'
  | 'parameter';

/** One parsed command. */
export interface ModelfileCommand {
  name: ModelfileCommandName;
  /** For `parameter`: the parameter name; for `message`: the role. */
  key?: string;
  /** The value with quotes stripped. */
  value: string;
  /** 1-based line where the command starts. */
  line: number;
}

/** A chat message baked into a model (`MESSAGE role content`). */
export interface ModelfileMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The commands of a Modelfile grouped by meaning. */
export interface Modelfile {
  /** Every command in file order. */
  commands: ModelfileCommand[];
  /** The first FROM (model name or path). */
  from: string;
  /** Further FROM lines (projectors in Ollama), in order. */
  extraFrom: string[];
  adapters: string[];
  draft?: string;
  template?: string;
  system?: string;
  renderer?: string;
  parser?: string;
  requires?: string;
  /** Parameter name → every value given, in order (repeated `PARAMETER stop` accumulates). */
  parameters: Map<string, string[]>;
  messages: ModelfileMessage[];
  licenses: string[];
}

const COMMANDS = new Set([
  'from',
  'license',
  'template',
  'system',
  'adapter',
  'draft',
  'renderer',
  'parser',
  'parameter',
  'message',
  'requires',
]);

const INVALID_COMMAND =
  'command must be one of "from", "license", "template", "system", "adapter", "draft", "renderer", "parser", ' +
  '"parameter", "message", or "requires"';
const INVALID_ROLE = 'message role must be one of "system", "user", or "assistant"';

type State = 'nil' | 'name' | 'value' | 'parameter' | 'message' | 'comment';

const isAlpha = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isDigit = (c: string) => c >= '0' && c <= '9';
const isSpace = (c: string) => c === ' ' || c === '\t';
const isNewline = (c: string) => c === '\r' || c === '\n';
/** Go's strconv.IsPrint, approximately: drop control characters other than the ones handled explicitly. */
const isPrint = (c: string) => !/[\u0000-\u001f\u007f-\u009f]/.test(c);

function lineError(line: number, message: string): InvalidRequestError {
  return new InvalidRequestError(`(line ${line}): ${message}`, 'modelfile');
}

/** Strips `"""…"""` or `"…"`; `ok` is false for an opening quote without its closing one. */
function unquote(s: string): { text: string; ok: boolean } {
  if (s.startsWith('"""')) {
    if (s.length >= 6 && s.endsWith('"""')) return { text: s.slice(3, -3), ok: true };
    return { text: '', ok: false };
  }
  if (s.startsWith('"')) {
    if (s.length >= 2 && s.endsWith('"')) return { text: s.slice(1, -1), ok: true };
    return { text: '', ok: false };
  }
  return { text: s, ok: true };
}

/** Decodes the body: UTF-8, or UTF-16 when it starts with a byte-order mark (Ollama accepts both). */
function decodeText(input: string | Uint8Array): string {
  if (typeof input === 'string') return input.replace(/^\uFEFF/, '');
  if (input.length >= 2 && input[0] === 0xff && input[1] === 0xfe) {
    return new TextDecoder('utf-16le').decode(input.subarray(2));
  }
  if (input.length >= 2 && input[0] === 0xfe && input[1] === 0xff) {
    return new TextDecoder('utf-16be').decode(input.subarray(2));
  }
  return new TextDecoder('utf-8').decode(input).replace(/^\uFEFF/, '');
}

/**
 * Parses Modelfile text into its commands (the token level of Ollama's ParseFile).
 * @throws InvalidRequestError `(line N): command must be one of …`, `(line N): message role must be one of …`,
 *   `(line N): unexpected EOF` (unterminated quote, or a command/PARAMETER/MESSAGE without a value; Ollama prints
 *   `unexpected EOF` without the line), `no FROM line`.
 */
export function parseModelfileCommands(input: string | Uint8Array): ModelfileCommand[] {
  const text = decodeText(input);
  const commands: ModelfileCommand[] = [];
  let state: State = 'nil';
  let buf = '';
  let line = 1;
  let commandLine = 1;
  let name: ModelfileCommandName = 'model';
  let key: string | undefined;
  let prevWasCR = false;

  const transition = (c: string): { next: State; keep: boolean } => {
    switch (state) {
      case 'nil':
        if (c === '#') return { next: 'comment', keep: false };
        if (isSpace(c) || isNewline(c)) return { next: 'nil', keep: false };
        return { next: 'name', keep: true };
      case 'name':
        if (isAlpha(c)) return { next: 'name', keep: true };
        if (isSpace(c)) return { next: 'value', keep: false };
        throw lineError(commandLine, INVALID_COMMAND);
      case 'value':
        if (isNewline(c) || isSpace(c)) return { next: 'nil', keep: true };
        return { next: 'value', keep: true };
      case 'parameter':
        if (isAlpha(c) || isDigit(c) || c === '_') return { next: 'parameter', keep: true };
        if (isSpace(c)) return { next: 'value', keep: false };
        throw lineError(commandLine, 'unexpected EOF');
      case 'message':
        if (isAlpha(c)) return { next: 'message', keep: true };
        if (isSpace(c)) return { next: 'value', keep: false };
        throw lineError(commandLine, 'unexpected EOF');
      case 'comment':
        if (isNewline(c)) return { next: 'nil', keep: false };
        return { next: 'comment', keep: false };
    }
  };

  for (const c of text) {
    // A CRLF pair counts as one line break.
    if (c === '\n' || c === '\r') {
      if (!(c === '\n' && prevWasCR)) line++;
    }
    prevWasCR = c === '\r';
    const { next: proposed, keep } = transition(c);
    let next = proposed;
    if (next !== state) {
      let consumed = false;
      switch (state) {
        case 'name': {
          const word = buf.toLowerCase();
          if (!COMMANDS.has(word)) throw lineError(commandLine, INVALID_COMMAND);
          if (word === 'from') name = 'model';
          else name = word as ModelfileCommandName;
          if (word === 'parameter') next = 'parameter';
          if (word === 'message') next = 'message';
          key = undefined;
          break;
        }
        case 'parameter':
          key = buf;
          break;
        case 'message':
          if (buf !== 'system' && buf !== 'user' && buf !== 'assistant') throw lineError(commandLine, INVALID_ROLE);
          key = buf;
          break;
        case 'value': {
          const { text: value, ok } = unquote(buf.trim());
          if (!ok || isSpace(c)) {
            // Still inside the value: an open quote spans lines, and spaces never end a value.
            buf += c;
            consumed = true;
            break;
          }
          commands.push({ name, key, value, line: commandLine });
          break;
        }
        case 'nil':
          commandLine = line;
          break;
        case 'comment':
          break;
      }
      if (consumed) continue;
      buf = '';
      state = next;
    }
    if (keep && isPrint(c)) buf += c;
  }

  switch (state) {
    case 'nil':
    case 'comment':
      break;
    case 'value': {
      const { text: value, ok } = unquote(buf.trim());
      if (!ok) throw lineError(commandLine, 'unexpected EOF');
      commands.push({ name, key, value, line: commandLine });
      break;
    }
    case 'name':
    case 'parameter':
    case 'message':
      throw lineError(commandLine, 'unexpected EOF');
  }
  if (!commands.some((cmd) => cmd.name === 'model')) throw new InvalidRequestError('no FROM line', 'modelfile');
  return commands;
}

/** `REQUIRES` accepts a semantic version with an optional `v` prefix (§10.5). */
const SEMVER = /^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * Parses a Modelfile and groups its commands (reference/ollama-api.md §10.5).
 * @throws InvalidRequestError for grammar errors (see parseModelfileCommands) and
 *   `requires must be a valid semver (e.g. 0.14.0)`.
 */
export function parseModelfile(input: string | Uint8Array): Modelfile {
  const commands = parseModelfileCommands(input);
  const file: Modelfile = {
    commands,
    from: '',
    extraFrom: [],
    adapters: [],
    parameters: new Map(),
    messages: [],
    licenses: [],
  };
  for (const cmd of commands) {
    switch (cmd.name) {
      case 'model':
        if (file.from === '') file.from = cmd.value;
        else file.extraFrom.push(cmd.value);
        break;
      case 'adapter':
        file.adapters.push(cmd.value);
        break;
      case 'draft':
        file.draft = cmd.value;
        break;
      case 'template':
        file.template = cmd.value;
        break;
      case 'system':
        file.system = cmd.value;
        break;
      case 'renderer':
        file.renderer = cmd.value;
        break;
      case 'parser':
        file.parser = cmd.value;
        break;
      case 'requires':
        if (!SEMVER.test(cmd.value)) throw new InvalidRequestError('requires must be a valid semver (e.g. 0.14.0)');
        file.requires = cmd.value.replace(/^v/, '');
        break;
      case 'license':
        file.licenses.push(cmd.value);
        break;
      case 'message':
        file.messages.push({ role: cmd.key as ModelfileMessage['role'], content: cmd.value });
        break;
      case 'parameter': {
        const name = cmd.key ?? '';
        const values = file.parameters.get(name) ?? [];
        values.push(cmd.value);
        file.parameters.set(name, values);
        break;
      }
    }
  }
  return file;
}
