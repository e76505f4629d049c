import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommanderError } from 'commander';
import {
  checkArgs,
  cobraParseError,
  COMMAND_ENV,
  envDocs,
  normalizeArgv,
  parseBoolFlag,
  parseIntFlag,
} from '../../../src/cli/cobra';
import { parseModelName, pushDestination } from '../../../src/cli/commands';
import { CliError, errorText, notFoundAsTyped } from '../../../src/cli/errors';
import { ProgressView } from '../../../src/cli/progress';
import { inferThink, parseThink, requestFormat } from '../../../src/cli/run';

describe('cli parity with cmd/cmd.go (issue 26)', () => {
  it('item 2: --format sends a JSON schema as an object, json as "json", other text as a string', () => {
    const schema = '{"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]}';
    assert.deepEqual(requestFormat(schema), JSON.parse(schema));
    assert.equal(requestFormat('json'), 'json');
    assert.equal(requestFormat('not json'), 'not json');
    assert.equal(requestFormat(''), undefined);
  });

  it('item 3: no server → Ollama text', () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    assert.equal(errorText(refused), "could not connect to ollama server, run 'ollama serve' to start it");
  });

  it('item 4: push destination is host/namespace/model:tag (ollama.com: its web address)', () => {
    assert.equal(pushDestination('localhost:5000/test/tiny'), 'localhost:5000/test/tiny:latest');
    assert.equal(pushDestination('127.0.0.1:5000/test/tiny:v1'), '127.0.0.1:5000/test/tiny:v1');
    assert.equal(pushDestination('me/model'), 'https://ollama.com/me/model');
    assert.equal(pushDestination('me/model:q4'), 'https://ollama.com/me/model:q4');
    assert.deepEqual(parseModelName('tiny'), {
      host: 'registry.ollama.ai',
      namespace: 'library',
      model: 'tiny',
      tag: 'latest',
    });
  });

  it('item 5: pull bars are "pulling <12 hex>:", the first 0-byte record skipped', () => {
    let out = '';
    const view = new ProgressView(
      { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WriteStream,
      false,
      {
        pullLabels: true,
      },
    );
    const digest = `sha256:${'ab12'.repeat(16)}`;
    view.update({ status: 'pulling manifest' });
    for (const completed of [0, 1500]) {
      view.update({ status: `pulling layer ${'ab12'.repeat(3)}`, digest, total: 1500, completed });
    }
    view.update({ status: 'verifying sha256 digest' });
    view.update({ status: 'writing manifest' });
    view.update({ status: 'success' });
    view.stop();
    assert.equal(
      out,
      'pulling manifest\npulling ab12ab12ab12: 1.5 KB\npulling ab12ab12ab12: 100% 1.5 KB\n' +
        'verifying sha256 digest\nwriting manifest\nsuccess\n',
    );
  });

  it('item 6: --think values, max accepted, the exact error; a thinking model thinks by default', () => {
    assert.equal(parseThink('max'), 'max');
    assert.equal(parseThink(''), true);
    assert.equal(parseThink('true'), true);
    assert.equal(parseThink(undefined), undefined);
    assert.throws(
      () => parseThink('bogus'),
      (e: Error) =>
        e instanceof CliError &&
        e.message === 'invalid value for --think: "bogus" (must be true, false, high, medium, low, or max)',
    );
    assert.equal(inferThink(undefined, ['completion', 'thinking']), true);
    assert.equal(inferThink(undefined, ['completion']), undefined);
    assert.equal(inferThink(false, ['thinking']), false);
    // pflag NoOptDefVal: a bare --think never takes the next word.
    assert.deepEqual(normalizeArgv(['run', 'm', '--think', 'why?', '--', '--think']), [
      'run',
      'm',
      '--think=true',
      'why?',
      '--',
      '--think',
    ]);
  });

  it('item 7: --truncate / --dimensions parse as pflag does', () => {
    assert.equal(parseBoolFlag('truncate', 'false'), false);
    assert.equal(parseBoolFlag('truncate', 'T'), true);
    assert.throws(
      () => parseBoolFlag('truncate', 'x'),
      /^Error: invalid argument "x" for "--truncate" flag: strconv\.ParseBool: parsing "x": invalid syntax$/,
    );
    assert.equal(parseIntFlag('dimensions', '8'), 8);
    assert.throws(() => parseIntFlag('dimensions', 'x'), /strconv\.ParseInt: parsing "x": invalid syntax/);
  });

  it('item 8: a 404 for NAME:latest names the model as typed', () => {
    const err = Object.assign(new Error("model 'nosuch:latest' not found"), { status_code: 404 });
    assert.equal((notFoundAsTyped(err, 'nosuch') as Error).message, "model 'nosuch' not found");
    const other = Object.assign(new Error('boom'), { status_code: 500 });
    assert.equal(notFoundAsTyped(other, 'x'), other);
  });

  it('item 13: the Environment Variables block of appendEnvDocs', () => {
    assert.equal(
      envDocs(['OLLAMA_HOST']),
      '\nEnvironment Variables:\n      OLLAMA_HOST                   IP Address for the ollama server (default 127.0.0.1:11434)',
    );
    // serve: the variables llamad reads, in Ollama's order (the KV cache pair after OLLAMA_ORIGINS).
    const serve = envDocs(COMMAND_ENV.serve).split('\n').slice(-4);
    assert.deepEqual(serve, [
      '      OLLAMA_ORIGINS                A comma separated list of allowed origins',
      '      OLLAMA_FLASH_ATTENTION        Enabled flash attention',
      '      OLLAMA_KV_CACHE_TYPE          Quantization type for the K/V cache (default: f16)',
      '      OLLAMA_LOAD_TIMEOUT           How long to allow model loads to stall before giving up (default "5m")',
    ]);
  });

  it("item 14: cobra's argument and flag errors", () => {
    assert.throws(() => checkArgs({ exact: 1 }, []), /^Error: accepts 1 arg\(s\), received 0$/);
    assert.throws(() => checkArgs({ exact: 2 }, ['a']), /^Error: accepts 2 arg\(s\), received 1$/);
    assert.throws(() => checkArgs({ min: 1 }, []), /^Error: requires at least 1 arg\(s\), only received 0$/);
    assert.doesNotThrow(() => checkArgs('any', ['a', 'b']));
    const unknown = new CommanderError(1, 'commander.unknownOption', "error: unknown option '--bogus'");
    assert.equal(cobraParseError(unknown), 'unknown flag: --bogus');
    const short = new CommanderError(1, 'commander.unknownOption', "error: unknown option '-z'");
    assert.equal(cobraParseError(short), "unknown shorthand flag: 'z' in -z");
    const missing = new CommanderError(
      1,
      'commander.optionMissingArgument',
      "error: option '--format <format>' argument missing",
    );
    assert.equal(cobraParseError(missing), 'flag needs an argument: --format');
  });
});
