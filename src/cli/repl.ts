import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface, Interface } from 'node:readline';
import { listCommand, showInfo } from './commands';
import { errorText, isConnectionError } from './errors';

import { parseParameter, parseThink, Session } from './session';

const HELP = `Available Commands:
  /set            Set session variables
  /show           Show model information
  /load <model>   Load a session or model
  /save <model>   Save your current session
  /clear          Clear session context
  /bye            Exit
  /?, /help       Help for a command
  /? shortcuts    Help for keyboard shortcuts

Use """ to begin a multi-line message.
`;

const SET_HELP = `Available Commands:
  /set parameter ...     Set a parameter
  /set system <string>   Set system message
  /set history           Enable history
  /set nohistory         Disable history
  /set wordwrap          Enable wordwrap
  /set nowordwrap        Disable wordwrap
  /set format json       Enable JSON mode
  /set noformat          Disable formatting
  /set verbose           Show LLM stats
  /set quiet             Disable LLM stats
  /set think             Enable thinking
  /set nothink           Disable thinking
`;

const SHOW_HELP = `Available Commands:
  /show info         Show details for this model
  /show license      Show model license
  /show modelfile    Show Modelfile for this model
  /show parameters   Show parameters for this model
  /show system       Show system message
  /show template     Show prompt template
`;

const SHORTCUTS = `Available keyboard shortcuts:
  Ctrl + a            Move to the beginning of the line (Home)
  Ctrl + e            Move to the end of the line (End)
  Ctrl + k            Delete the sentence after the cursor
  Ctrl + u            Delete the sentence before the cursor
  Ctrl + w            Delete the word before the cursor
  Ctrl + l            Clear the screen
  Ctrl + c            Stop the model from responding
  Ctrl + d            Exit ollama (/bye)
`;

/** Path of the REPL history file (~/.llamad/history; none with OLLAMA_NOHISTORY). */
function historyFile(): string | undefined {
  if (process.env.OLLAMA_NOHISTORY) return undefined;
  return join(process.env.LLAMAD_HOME ?? join(homedir(), '.llamad'), 'history');
}

/** The interactive loop. Resolves when the user leaves (/bye, Ctrl-D, end of input). */
export async function repl(s: Session, input: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<void> {
  const tty = Boolean(input.isTTY && (process.stdout as NodeJS.WriteStream).isTTY);
  const histPath = tty ? historyFile() : undefined;
  let history: string[] = [];
  let historyOn = Boolean(histPath);
  if (histPath && existsSync(histPath)) {
    history = readFileSync(histPath, 'utf8').split('\n').filter(Boolean).reverse().slice(0, 500);
  }
  const rl: Interface = createInterface({
    input,
    output: tty ? process.stdout : undefined,
    terminal: tty,
    history,
    historySize: 500,
    prompt: '>>> ',
  });
  const out = s.out;
  const onInterrupt = () => {
    if (s.current) s.current.abort();
    else out.write('\nUse Ctrl + d or /bye to exit.\n');
    if (tty && !s.current) rl.prompt();
  };
  rl.on('SIGINT', onInterrupt);
  process.on('SIGINT', onInterrupt);
  const remember = (line: string) => {
    if (!historyOn || !histPath) return;
    try {
      mkdirSync(dirname(histPath), { recursive: true });
      appendFileSync(histPath, `${line}\n`);
    } catch {
      // history is best effort
    }
  };
  let multi: string[] | undefined;
  let multiTarget: 'prompt' | 'system' = 'prompt';
  if (tty) rl.prompt();
  try {
    for await (const rawLine of rl) {
      const line = rawLine;
      if (multi) {
        if (line.trimEnd().endsWith('"""')) {
          multi.push(line.trimEnd().slice(0, -3));
          const text = multi.join('\n');
          multi = undefined;
          rl.setPrompt('>>> ');
          remember(text);
          if (multiTarget === 'system') {
            s.system = text;
            out.write('Set system message.\n');
          } else if (text.trim()) {
            await s.chat(text);
          }
        } else {
          multi.push(line);
        }
        if (tty) rl.prompt();
        continue;
      }
      const trimmed = line.trim();
      if (trimmed.startsWith('"""')) {
        const rest = trimmed.slice(3);
        if (rest.endsWith('"""') && rest.length >= 3) {
          await s.chat(rest.slice(0, -3));
        } else {
          multi = [rest];
          multiTarget = 'prompt';
          rl.setPrompt('... ');
        }
        if (tty) rl.prompt();
        continue;
      }
      if (trimmed === '') {
        if (tty) rl.prompt();
        continue;
      }
      remember(trimmed);
      if (trimmed.startsWith('/')) {
        const words = trimmed.split(/\s+/);
        const cmd = words[0];
        if (cmd === '/bye' || cmd === '/exit') break;
        try {
          const r = await slashCommand(s, words, trimmed);
          if (r === 'multi-system') {
            multi = [trimmed.replace(/^\/set\s+system\s+"""/, '')];
            multiTarget = 'system';
            rl.setPrompt('... ');
          } else if (r === 'history-on') historyOn = Boolean(histPath);
          else if (r === 'history-off') historyOn = false;
        } catch (err) {
          out.write(`error: ${errorText(err)}\n`);
        }
      } else {
        try {
          await s.chat(trimmed);
        } catch (err) {
          if (isConnectionError(err)) throw err;
          out.write(`Error: ${errorText(err)}\n`);
        }
      }
      if (tty) rl.prompt();
    }
  } finally {
    process.off('SIGINT', onInterrupt);
    rl.close();
  }
}

/** Handles one `/…` command; returns a signal for the loop where it must change its own state. */
async function slashCommand(
  s: Session,
  words: string[],
  line: string,
): Promise<'multi-system' | 'history-on' | 'history-off' | undefined> {
  const out = s.out;
  switch (words[0]) {
    case '/?':
    case '/help':
      if (words[1] === 'set') out.write(SET_HELP);
      else if (words[1] === 'show') out.write(SHOW_HELP);
      else if (words[1] === 'shortcuts' || words[1] === 'shortcut') out.write(SHORTCUTS);
      else out.write(HELP);
      return undefined;
    case '/clear':
      s.messages = [];
      out.write('Cleared session context\n');
      return undefined;
    case '/list':
      await listCommand(s.conn, undefined, out as NodeJS.WriteStream);
      return undefined;
    case '/load': {
      if (!words[1]) {
        out.write('Usage:\n  /load <modelname>\n');
        return undefined;
      }
      out.write(`Loading model '${words[1]}'\n`);
      await s.load(words[1]);
      s.messages = [];
      await s.conn.client.generate({ model: s.model, prompt: '', keep_alive: s.keepAlive });
      return undefined;
    }
    case '/save': {
      if (!words[1]) {
        out.write('Usage:\n  /save <modelname>\n');
        return undefined;
      }
      await s.conn.client.create({
        model: words[1],
        from: s.model,
        ...(s.system !== undefined ? { system: s.system } : {}),
        ...(Object.keys(s.options).length > 0 ? { parameters: s.options } : {}),
        ...(s.messages.length > 0 ? { messages: s.messages } : {}),
        stream: false,
      });
      out.write(`Created new model '${words[1]}'\n`);
      return undefined;
    }
    case '/set':
      return setCommand(s, words, line);
    case '/show':
      await show(s, words[1]);
      return undefined;
    default:
      out.write(`Unknown command '${words[0]}'. Type /? for help\n`);
      return undefined;
  }
}

function setCommand(
  s: Session,
  words: string[],
  line: string,
): 'multi-system' | 'history-on' | 'history-off' | undefined {
  const out = s.out;
  switch (words[1]) {
    case 'parameter': {
      if (words.length < 4) {
        out.write('Usage:\n  /set parameter <name> <value>\n');
        return undefined;
      }
      const [name, ...values] = words.slice(2);
      s.options[name] = parseParameter(name, values);
      out.write(`Set parameter '${name}' to '${values.join(', ')}'\n`);
      return undefined;
    }
    case 'system': {
      const text = line.replace(/^\/set\s+system\s*/, '');
      if (text.startsWith('"""') && !(text.length >= 6 && text.endsWith('"""'))) return 'multi-system';
      s.system = text.replace(/^"""|"""$/g, '').replace(/^"(.*)"$/s, '$1');
      out.write('Set system message.\n');
      return undefined;
    }
    case 'history':
      out.write("Set 'history' mode.\n");
      return 'history-on';
    case 'nohistory':
      out.write("Set 'nohistory' mode.\n");
      return 'history-off';
    case 'wordwrap':
      s.wordWrap = true;
      out.write("Set 'wordwrap' mode.\n");
      return undefined;
    case 'nowordwrap':
      s.wordWrap = false;
      out.write("Set 'nowordwrap' mode.\n");
      return undefined;
    case 'format':
      if (words[2] !== 'json') {
        out.write("Invalid or missing format. For 'json' mode use '/set format json'\n");
        return undefined;
      }
      s.format = 'json';
      out.write("Set format to 'json' mode.\n");
      return undefined;
    case 'noformat':
      s.format = undefined;
      out.write('Disabled format.\n');
      return undefined;
    case 'verbose':
      s.verbose = true;
      out.write("Set 'verbose' mode.\n");
      return undefined;
    case 'quiet':
      s.verbose = false;
      out.write("Set 'quiet' mode.\n");
      return undefined;
    case 'think':
      s.think = words[2] ? parseThink(words[2]) : true;
      out.write(`Set 'think' mode${words[2] ? ` to '${words[2]}'` : ''}.\n`);
      return undefined;
    case 'nothink':
      s.think = false;
      out.write("Set 'nothink' mode.\n");
      return undefined;
    default:
      out.write(SET_HELP);
      return undefined;
  }
}

async function show(s: Session, what: string | undefined): Promise<void> {
  const out = s.out;
  const info = await s.conn.client.show({ model: s.model, ...(s.system !== undefined ? { system: s.system } : {}) });
  switch (what ?? '') {
    case 'info':
      out.write(showInfo(info, false));
      return;
    case 'license':
      out.write(info.license ? `${info.license}\n` : 'No license was specified for this model.\n');
      return;
    case 'modelfile':
      out.write(`${info.modelfile}\n`);
      return;
    case 'parameters': {
      if (info.parameters) out.write(`Model defined parameters:\n${info.parameters}\n`);
      else out.write('No parameters were specified for this model.\n');
      const keys = Object.keys(s.options);
      if (keys.length > 0) {
        out.write('\nUser defined parameters:\n');
        for (const k of keys) {
          const v = s.options[k];
          out.write(`${k.padEnd(30)} ${Array.isArray(v) ? v.join(' ') : String(v)}\n`);
        }
      }
      return;
    }
    case 'system':
      out.write(
        (s.system ?? info.system)
          ? `${s.system ?? info.system}\n`
          : 'No system message was specified for this model.\n',
      );
      return;
    case 'template':
      out.write(info.template ? `${info.template}\n` : 'No prompt template was specified for this model.\n');
      return;
    default:
      out.write(SHOW_HELP);
  }
}
