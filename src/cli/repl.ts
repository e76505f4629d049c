import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface, Interface } from 'node:readline';
import { listCommand, showInfo } from './commands';
import { errorText, isConnectionError } from './errors';

import { goValue } from './gofmt';
import { parseParameter, Session } from './session';

/** cmd/interactive.go `usage` (on stderr, as Ollama). */
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

/** cmd/interactive.go `usageSet`. */
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

/** cmd/interactive.go `usageShow`. */
const SHOW_HELP = `Available Commands:
  /show info         Show details for this model
  /show license      Show model license
  /show modelfile    Show Modelfile for this model
  /show parameters   Show parameters for this model
  /show system       Show system message
  /show template     Show prompt template

`;

/** cmd/interactive.go `usageParameters`. */
const PARAMETERS_HELP = `Available Parameters:
  /set parameter seed <int>             Random number seed
  /set parameter num_predict <int>      Max number of tokens to predict
  /set parameter top_k <int>            Pick from top k num of tokens
  /set parameter top_p <float>          Pick token based on sum of probabilities
  /set parameter min_p <float>          Pick token based on top token probability * min_p
  /set parameter num_ctx <int>          Set the context size
  /set parameter temperature <float>    Set creativity level
  /set parameter repeat_penalty <float> How strongly to penalize repetitions
  /set parameter repeat_last_n <int>    Set how far back to look for repetitions
  /set parameter num_gpu <int>          The number of layers to send to the GPU
  /set parameter stop <string> <string> ...   Set the stop parameters

`;

/** cmd/interactive.go `usageShortcuts`, without Ctrl + g (llamad's REPL has no external editor). */
const SHORTCUTS = `Available keyboard shortcuts:
  Ctrl + a            Move to the beginning of the line (Home)
  Ctrl + e            Move to the end of the line (End)
   Alt + b            Move back (left) one word
   Alt + f            Move forward (right) one word
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
          const r = await slashCommand(s, words);
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

/** The model cannot be found: cmd/interactive.go `/load` says so and keeps the current model. */
function isNotFound(err: unknown): boolean {
  return err instanceof Error && err.message.includes('not found');
}

/** Handles one `/…` command (cmd/interactive.go `generateInteractive`); returns a signal for the loop's own state. */
async function slashCommand(
  s: Session,
  words: string[],
): Promise<'multi-system' | 'history-on' | 'history-off' | undefined> {
  const out = s.out;
  switch (words[0]) {
    case '/?':
    case '/help':
      if (words.length === 1) {
        const multimodal = s.capabilities.includes('vision') || s.capabilities.includes('audio');
        s.err.write(
          HELP +
            (multimodal ? 'Use /path/to/file to include .jpg, .png, .webp images, or .wav audio files.\n' : '') +
            '\n',
        );
      } else if (words[1] === 'set' || words[1] === '/set') s.err.write(SET_HELP);
      else if (words[1] === 'show' || words[1] === '/show') s.err.write(SHOW_HELP);
      else if (words[1] === 'shortcuts' || words[1] === 'shortcut') s.err.write(SHORTCUTS);
      return undefined;
    case '/clear':
      s.messages = [];
      out.write('Cleared session context\n');
      return undefined;
    case '/list':
      await listCommand(s.conn, words[1], out as NodeJS.WriteStream);
      return undefined;
    case '/load': {
      if (words.length !== 2) {
        out.write('Usage:\n  /load <modelname>\n');
        return undefined;
      }
      const previous = s.model;
      out.write(`Loading model '${words[1]}'\n`);
      try {
        await s.load(words[1]);
        await s.conn.client.generate({
          model: s.model,
          prompt: '',
          ...(s.keepAlive !== undefined ? { keep_alive: s.keepAlive } : {}),
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        out.write(`Couldn't find model '${words[1]}'\n`);
        if (s.model !== previous) await s.load(previous);
        return undefined;
      }
      s.messages = [];
      return undefined;
    }
    case '/save': {
      if (words.length !== 2) {
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
      return setCommand(s, words);
    case '/show':
      await show(s, words[1]);
      return undefined;
    default:
      out.write(`Unknown command '${words[0]}'. Type /? for help\n`);
      return undefined;
  }
}

function setCommand(s: Session, words: string[]): 'multi-system' | 'history-on' | 'history-off' | undefined {
  const out = s.out;
  if (words.length < 2) {
    s.err.write(SET_HELP);
    return undefined;
  }
  switch (words[1]) {
    case 'parameter': {
      if (words.length < 4) {
        s.err.write(PARAMETERS_HELP);
        return undefined;
      }
      const [name, ...values] = words.slice(2);
      s.options[name] = parseParameter(name, values);
      out.write(`Set parameter '${name}' to '${values.join(', ')}'\n`);
      return undefined;
    }
    case 'system': {
      if (words.length < 3) {
        s.err.write(SET_HELP);
        return undefined;
      }
      const text = words.slice(2).join(' ');
      if (text.startsWith('"""') && !(text.length >= 6 && text.endsWith('"""'))) return 'multi-system';
      s.system = text.replace(/^"""/, '').replace(/"""$/, '');
      out.write('Set system message.\n');
      return undefined;
    }
    case 'history':
      return 'history-on';
    case 'nohistory':
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
      // As Ollama, the level is not checked here: the server answers for it.
      s.think = words[2] ? (words[2] as 'high') : true;
      s.thinkSet = s.think;
      out.write(words[2] ? `Set 'think' mode to '${words[2]}'.\n` : "Set 'think' mode.\n");
      return undefined;
    case 'nothink':
      s.think = false;
      s.thinkSet = false;
      out.write("Set 'nothink' mode.\n");
      return undefined;
    default:
      out.write(`Unknown command '/set ${words[1]}'. Type /? for help\n`);
      return undefined;
  }
}

/** `/show …` as cmd/interactive.go: the texts go to stdout, `info` to stderr, usage to stderr. */
async function show(s: Session, what: string | undefined): Promise<void> {
  const out = s.out;
  if (what === undefined) {
    s.err.write(SHOW_HELP);
    return;
  }
  const info = await s.conn.client.show({
    model: s.model,
    ...(s.system !== undefined ? { system: s.system } : {}),
    options: s.options,
  } as Parameters<typeof s.conn.client.show>[0]);
  switch (what) {
    case 'info':
      s.err.write(showInfo(info, false));
      return;
    case 'license':
      out.write(info.license ? `${info.license}\n` : 'No license was specified for this model.\n');
      return;
    case 'modelfile':
      out.write(`${info.modelfile}\n`);
      return;
    case 'parameters': {
      out.write('Model defined parameters:\n');
      if (!info.parameters) out.write('  No additional parameters were specified for this model.\n');
      else for (const l of info.parameters.split('\n')) out.write(`  ${l}\n`);
      out.write('\n');
      const keys = Object.keys(s.options);
      if (keys.length > 0) {
        out.write('User defined parameters:\n');
        for (const k of keys) out.write(`  ${k.padEnd(30)} ${goValue(s.options[k])}\n`);
        out.write('\n');
      }
      return;
    }
    case 'system': {
      const text = s.system || info.system;
      out.write(text ? `${text}\n\n` : 'No system message was specified for this model.\n');
      return;
    }
    case 'template':
      out.write(info.template ? `${info.template}\n` : 'No prompt template was specified for this model.\n');
      return;
    default:
      out.write(`Unknown command '/show ${what}'. Type /? for help\n`);
  }
}
