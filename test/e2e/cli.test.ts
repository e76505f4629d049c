import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_QWEN2, TINY_QWEN2_TOOLS } from '../utils/models';
import { freePort, registryMissing, RegistryServer, startRegistry } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/src/cli/main.js …` as a subprocess (asynchronously: the daemon under test runs in this process)
 * with `input` piped to its stdin (not a TTY, so progress is printed as plain lines).
 */
function cli(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, OLLAMA_NOHISTORY: '1', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

// The `llamad` command line (issue 14; reference/ollama-api.md §14) against a daemon in this process on generated
// models, with a fake native binding (every answer is "Hello, world").
describe('llamad CLI', () => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: new FakeBinding() });
    env = { OLLAMA_HOST: t.baseUrl };
    dir = await mkdtemp(join(tmpdir(), 'llamad-cli-'));
  });
  after(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('create -f resolves FROM relative to the Modelfile and prints the progress lines', async () => {
    await writeFile(
      join(dir, 'Modelfile'),
      `FROM ${relative(dir, TINY_QWEN2)}\nPARAMETER temperature 0.5\nSYSTEM be brief\nLICENSE MIT test\n`,
    );
    const r = await cli(['create', 'tiny', '-f', join(dir, 'Modelfile')], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines[0], 'gathering model components');
    assert.equal(lines.at(-1), 'success');
    const tools = await cli(['create', 'agent', '-f', join(dir, 'Tools')], env);
    assert.equal(tools.code, 1);
    assert.match(tools.stderr, /^Error: open .*Tools: no such file or directory\n$/);
    await writeFile(join(dir, 'Tools'), `FROM ${TINY_QWEN2_TOOLS}\n`);
    assert.equal((await cli(['create', 'agent', '-f', join(dir, 'Tools')], env)).code, 0);
  });

  it('list / ls: NAME ID SIZE MODIFIED with human sizes and times', async () => {
    const r = await cli(['list'], env);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    assert.match(header, /^NAME {4,}ID {4,}SIZE {4,}MODIFIED$/);
    const row = rows.find((l) => l.startsWith('tiny:latest'));
    assert.ok(row, r.stdout);
    assert.match(
      row,
      /^tiny:latest {4,}[0-9a-f]{12} {4}\d+(\.\d)? (B|KB|MB|GB) {4,}(Less than a second|\d+ seconds?) ago$/,
    );
    // ID column starts where the header's ID does.
    assert.equal(row.search(/[0-9a-f]{12}/), header.indexOf('ID'));
    const ls = await cli(['ls', 'tin'], env);
    assert.deepEqual(
      ls.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/)[0]),
      ['tiny:latest'],
    );
  });

  it('show: summary sections and each flag', async () => {
    const r = await cli(['show', 'tiny'], env);
    assert.equal(r.code, 0, r.stderr);
    for (const s of [
      '  Model',
      '    architecture',
      '    parameters',
      '    context length',
      '  Capabilities',
      '    completion',
      '  Parameters',
      '    temperature',
      '  System',
      '    be brief',
      '  License',
    ]) {
      assert.ok(r.stdout.includes(s), `${s} in\n${r.stdout}`);
    }
    assert.ok(!r.stdout.includes('Metadata'));
    // Item 11 of issue 26: no blank line first; the parameters row is details.parameter_size.
    assert.ok(r.stdout.startsWith('  Model\n    architecture '), r.stdout);
    const shown = (await (
      await fetch(`${t.baseUrl}/api/show`, { method: 'POST', body: '{"model":"tiny"}' })
    ).json()) as {
      details: { parameter_size: string };
    };
    const size = shown.details.parameter_size;
    assert.match(r.stdout, new RegExp(`^ {4}parameters {6,}${size.replace('.', '\\.')} {4}$`, 'm'));
    assert.match((await cli(['show', 'tiny', '-v'], env)).stdout, /  Metadata\n {4}general\.architecture {4,}llama/);
    assert.match((await cli(['show', 'tiny', '--parameters'], env)).stdout, /^temperature +0\.5$/m);
    // `--system` and `--template` print the text as it is (fmt.Print), the others add a newline (fmt.Println).
    assert.equal((await cli(['show', 'tiny', '--system'], env)).stdout, 'be brief');
    assert.equal((await cli(['show', 'tiny', '--license'], env)).stdout, 'MIT test\n');
    assert.match((await cli(['show', 'tiny', '--modelfile'], env)).stdout, /^# Modelfile generated by "ollama show"\n/);
    assert.ok((await cli(['show', 'tiny', '--template'], env)).stdout.length > 1);
    const both = await cli(['show', 'tiny', '--system', '--license'], env);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /^Error: only one of '--license', '--modelfile'/);
  });

  it('run with a prompt argument streams the answer; --verbose prints the timing block', async () => {
    const r = await cli(['run', 'tiny', 'say', 'hello', '--verbose'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Hello, world\n\n');
    for (const k of [
      'total duration:',
      'load duration:',
      'prompt eval count:',
      'prompt eval rate:',
      'eval count:',
      'eval duration:',
      'eval rate:',
    ]) {
      assert.ok(r.stderr.includes(k), `${k} in ${r.stderr}`);
    }
    assert.match(r.stderr, /^eval rate: {12}\d+\.\d{2} tokens\/s$/m);
  });

  it('run with piped stdin takes it as the prompt', async () => {
    const r = await cli(['run', 'tiny'], env, 'a prompt from a pipe\n/bye\n');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Hello, world\n\n');
  });

  it('run --interactive: a scripted REPL session (/set parameter, /show, """, /clear, /bye)', async () => {
    const script = [
      '/set parameter num_predict 4',
      '/set system You are terse.',
      '/show parameters',
      '/show system',
      'hi',
      '"""',
      'two',
      'lines"""',
      '/clear',
      '/save tiny-saved',
      '/load tiny-saved',
      '/show system',
      '/nope',
      '/bye',
      'never sent',
    ].join('\n');
    const r = await cli(['run', 'tiny', '--interactive'], env, script + '\n');
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout;
    assert.ok(out.includes("Set parameter 'num_predict' to '4'\n"), out);
    assert.ok(out.includes('Set system message.\n'), out);
    assert.match(out, /Model defined parameters:\n(.+\n)* {2}temperature {20,}0\.5\n/);
    assert.match(out, /User defined parameters:\n {2}num_predict {20,}4\n/);
    assert.ok(out.includes('You are terse.\n'), out);
    assert.equal(out.split('Hello, world\n\n').length - 1, 2, out);
    assert.ok(out.includes('Cleared session context\n'), out);
    assert.ok(out.includes("Unknown command '/nope'. Type /? for help\n"), out);
    assert.ok(out.includes("Created new model 'tiny-saved'\nLoading model 'tiny-saved'\nYou are terse.\n\n"), out);
    assert.equal((await cli(['show', 'tiny-saved', '--system'], env)).stdout, 'You are terse.');
    assert.match((await cli(['show', 'tiny-saved', '--parameters'], env)).stdout, /^num_predict +4$/m);
  });

  it('ps: NAME ID SIZE PROCESSOR CONTEXT UNTIL', async () => {
    assert.equal((await cli(['run', 'tiny', 'hi'], env)).code, 0);
    const r = await cli(['ps'], env);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    assert.match(header, /^NAME {4,}ID {4,}SIZE {4,}PROCESSOR {4,}CONTEXT {4,}UNTIL$/);
    // The daemon names a runner after one of the models sharing its weights (tiny or tiny-saved from the REPL test).
    const row = rows.find((l) => /^tiny(-saved)?:latest /.test(l));
    assert.ok(row, r.stdout);
    assert.match(
      row,
      /[0-9a-f]{12} {4,}\S+ \S*B {4,}(100% CPU|100% GPU|\d+%\/\d+% CPU\/GPU) {4,}\d+ {4,}\d+ minutes from now$/,
    );
    const stop = await cli(['stop', 'tiny'], env);
    assert.equal(stop.code, 0, stop.stderr);
  });

  it('cp and rm', async () => {
    const cp = await cli(['cp', 'tiny', 'tiny-copy'], env);
    assert.equal(cp.code, 0, cp.stderr);
    assert.equal(cp.stdout, "copied 'tiny' to 'tiny-copy'\n");
    assert.match((await cli(['list'], env)).stdout, /^tiny-copy:latest /m);
    const r = await cli(['rm', 'tiny-copy'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "deleted 'tiny-copy'\n");
    assert.doesNotMatch((await cli(['list'], env)).stdout, /tiny-copy/);
  });

  it("a missing model: non-zero exit and Ollama's text", async () => {
    // Ollama's server names the model as typed (item 8 of issue 26); copy quotes it with %q.
    for (const [args, text] of [
      [['show', 'nosuch'], "Error: model 'nosuch' not found\n"],
      [['rm', 'nosuch'], "Error: model 'nosuch' not found\n"],
      [['cp', 'nosuch', 'x'], 'Error: model "nosuch" not found\n'],
    ] as Array<[string[], string]>) {
      assert.deepEqual(await cli(args, env), { code: 1, stdout: '', stderr: text }, args.join(' '));
    }
    const load = await cli(['run', 'tiny', '--interactive'], env, '/load nosuch\n/bye\n');
    assert.equal(load.code, 0, load.stderr);
    assert.equal(load.stdout, "Loading model 'nosuch'\nCouldn't find model 'nosuch'\n");
    // `run` pulls a model it does not have (as Ollama), so a missing model fails with the pull's error.
    const closed = await freePort();
    const run = await cli(['run', `127.0.0.1:${closed}/test/nosuch`, 'hi', '--insecure'], env);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^pulling manifest\n/);
    assert.match(run.stderr, /Error: pull model manifest: .*connection refused/);
    const stop = await cli(['stop', 'nosuch'], env);
    assert.equal(stop.code, 1);
    assert.equal(stop.stderr, 'Error: couldn\'t find model "nosuch" to stop\n');
  });

  it("no server: non-zero exit and Ollama's text", async () => {
    const down = { OLLAMA_HOST: `127.0.0.1:${await freePort()}` };
    const text = "Error: could not connect to ollama server, run 'ollama serve' to start it\n";
    const list = await cli(['list'], down);
    assert.deepEqual(list, { code: 1, stdout: '', stderr: text });
    assert.deepEqual(await cli(['run', 'tiny', 'hi'], down), { code: 1, stdout: '', stderr: text });
    const v = await cli(['--version'], down);
    assert.match(v.stdout, /Warning: could not connect to a running Ollama instance/);
  });

  it('help lists the commands; help COMMAND shows its flags', async () => {
    const r = await cli(['help'], env);
    assert.equal(r.code, 0, r.stderr);
    for (const c of [
      'serve|start',
      'create',
      'show',
      'run',
      'stop',
      'pull',
      'push',
      'list|ls',
      'ps',
      'cp',
      'rm',
      'launch',
    ]) {
      assert.ok(r.stdout.includes(`\n  ${c} `), c);
    }
    const run = await cli(['help', 'run'], env);
    for (const f of ['--format', '--keepalive', '--verbose', '--nowordwrap', '--think', '--hidethinking']) {
      assert.ok(run.stdout.includes(f), f);
    }
    assert.ok(!run.stdout.includes('--interactive'));
  });

  it('--version prints the server and client versions', async () => {
    const r = await cli(['--version'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ollama version is \d+\.\d+\.\d+\nllamad version is \d+\.\d+\.\d+\n$/);
  });

  it('launch codex writes the provider and keeps the other settings; refuses a model without tools', async () => {
    const codexHome = join(dir, 'codex');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(codexHome);
    const file = join(codexHome, 'config.toml');
    await writeFile(
      file,
      'model = "gpt-5"\napproval_policy = "never"\n\n[model_providers.llamad]\nbase_url = "http://old/v1"\n\n' +
        '[mcp_servers.docs]\ncommand = "docs-server"\n',
    );
    const r = await cli(['launch', 'codex', '--model', 'agent', '--config'], { ...env, CODEX_HOME: codexHome });
    assert.equal(r.code, 0, r.stderr);
    const text = await readFile(file, 'utf8');
    assert.match(text, /^model = "agent"$/m);
    assert.match(text, /^model_provider = "llamad"$/m);
    assert.match(text, /^approval_policy = "never"$/m);
    assert.match(text, /^\[mcp_servers\.docs\]\ncommand = "docs-server"$/m);
    assert.ok(
      text.includes(
        `[model_providers.llamad]\nname = "llamad"\nbase_url = "${t.baseUrl}/v1"\nwire_api = "responses"\n`,
      ),
      text,
    );
    assert.doesNotMatch(text, /gpt-5|http:\/\/old/);
    assert.equal(text.match(/\[model_providers\.llamad\]/g)?.length, 1);

    const noTools = await cli(['launch', 'codex', '--model', 'tiny', '--config'], { ...env, CODEX_HOME: codexHome });
    assert.equal(noTools.code, 1);
    assert.match(noTools.stderr, /^Error: model 'tiny' does not support tools/);
    const missing = await cli(['launch', 'codex', '--model', 'nosuch', '--config'], { ...env, CODEX_HOME: codexHome });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found: pull it with 'llamad pull nosuch' or create it/);
  });

  it('launch claude starts the agent with the environment pointing at the server', async () => {
    const record = join(dir, 'claude-env.json');
    const bin = join(dir, 'fake-claude.js');
    await writeFile(
      bin,
      `#!${process.execPath}\nrequire('fs').writeFileSync(${JSON.stringify(record)}, JSON.stringify({ env: process.env, argv: process.argv.slice(2) }));\nprocess.exit(3);\n`,
    );
    await chmod(bin, 0o755);
    const r = await cli(['launch', 'claude', '--model', 'agent', '--', '--print', 'hi'], {
      ...env,
      LLAMAD_CLAUDE_BIN: bin,
      LLAMAD_API_KEY: 'k-123',
    });
    assert.equal(r.code, 3, r.stderr);
    const got = JSON.parse(await readFile(record, 'utf8')) as { env: Record<string, string>; argv: string[] };
    assert.equal(got.env.ANTHROPIC_BASE_URL, t.baseUrl);
    assert.equal(got.env.ANTHROPIC_AUTH_TOKEN, 'k-123');
    assert.equal(got.env.ANTHROPIC_MODEL, 'agent');
    assert.equal(got.env.ANTHROPIC_SMALL_FAST_MODEL, 'agent');
    assert.deepEqual(got.argv, ['--print', 'hi']);
  });
});

/** A non-loopback IPv4 address of this machine, for the remote-server path of `create`; undefined when none. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && !i.internal && i.family === 'IPv4')?.address;

describe('llamad create against a server on another address', () => {
  let t: TestApp;
  let dir: string;

  before(async () => {
    if (!lanAddress) return;
    ensureTestModels();
    t = await createTestApp({ binding: new FakeBinding(), listenHost: '0.0.0.0' });
    dir = await mkdtemp(join(tmpdir(), 'llamad-cli-remote-'));
  });
  after(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    'uploads a local FROM file as a blob and references its digest',
    { skip: lanAddress ? false : 'no non-loopback address' },
    async () => {
      await copyFile(TINY_QWEN2, join(dir, 'weights.gguf'));
      await writeFile(join(dir, 'Modelfile'), 'FROM ./weights.gguf\nSYSTEM remote\n');
      const env = { OLLAMA_HOST: `${lanAddress}:${new URL(t.baseUrl).port}` };
      const r = await cli(['create', 'remote', '-f', join(dir, 'Modelfile')], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^copying file sha256:[0-9a-f]{64}: 100% \d+ MB$/m);
      assert.equal(r.stderr.trim().split('\n').at(-1), 'success');
      assert.equal((await cli(['show', 'remote', '--system'], env)).stdout, 'remote');
      // A second create finds the blob on the server (HEAD) and uploads nothing.
      const again = await cli(['create', 'remote2', '-f', join(dir, 'Modelfile')], env);
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stderr, /copying file/);
    },
  );
});

const skip = registryMissing();

describe('llamad CLI pull/push against docker-registry', () => {
  let t: TestApp;
  let registry: RegistryServer;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  before(async () => {
    if (skip) return;
    ensureTestModels();
    registry = await startRegistry();
    t = await createTestApp({ binding: new FakeBinding() });
    env = { OLLAMA_HOST: t.baseUrl };
    dir = await mkdtemp(join(tmpdir(), 'llamad-cli-reg-'));
    await writeFile(join(dir, 'Modelfile'), `FROM ${TINY_QWEN2}\n`);
  });
  after(async () => {
    await t?.close();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('push then pull print plain progress lines per layer', { skip }, async () => {
    const name = `${registry.host}/test/tiny:latest`;
    assert.equal((await cli(['create', name, '-f', join(dir, 'Modelfile')], env)).code, 0);
    const push = await cli(['push', name, '--insecure'], env);
    assert.equal(push.code, 0, push.stderr);
    const pushLines = push.stderr.trim().split('\n');
    assert.equal(pushLines[0], 'retrieving manifest');
    assert.ok(
      pushLines.some((l) => /^pushing (layer )?[0-9a-f]{12}: 100% \d/.test(l)),
      push.stderr,
    );
    assert.equal(pushLines.at(-1), 'success');
    assert.equal(push.stdout, `\nYou can find your model at:\n\n\t${name}\n`);

    assert.equal((await cli(['rm', name], env)).code, 0);
    const pull = await cli(['pull', name, '--insecure'], env);
    assert.equal(pull.code, 0, pull.stderr);
    const lines = pull.stderr.trim().split('\n');
    assert.equal(lines[0], 'pulling manifest');
    // As `ollama pull` (item 5 of issue 26): layers are `pulling <12 hex>:`; the server ends with Ollama's statuses.
    assert.ok(
      lines.some((l) => /^pulling [0-9a-f]{12}: \d+(\.\d)? [KMG]?B$/.test(l)),
      pull.stderr,
    );
    assert.ok(
      lines.some((l) => /^pulling [0-9a-f]{12}: 100% \d/.test(l)),
      pull.stderr,
    );
    assert.ok(!pull.stderr.includes('pulling layer'), pull.stderr);
    assert.deepEqual(lines.slice(-3), ['verifying sha256 digest', 'writing manifest', 'success']);
    assert.match((await cli(['list'], env)).stdout, new RegExp(`^${name.replace(/[.]/g, '\\.')} `, 'm'));

    const missing = await cli(['pull', `${registry.host}/test/nosuch`, '--insecure'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Error: .+/);

    // `run` on a model the server lacks pulls it first, then answers.
    assert.equal((await cli(['rm', name], env)).code, 0);
    const run = await cli(['run', name, 'hi', '--insecure'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^pulling manifest\n/);
    assert.match(run.stderr, /\nsuccess\n/);
    assert.ok(run.stdout.trim().length > 0, 'an answer');
  });
});
