import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { loadProgressOf, Spinner, SPINNER_FRAMES, startLoadIndicator } from '../../../src/cli/load-progress';
import { connect } from '../../../src/cli/host';

/** A stream that records what is written to it. */
class Capture extends Writable {
  text = '';
  constructor(readonly isTTY: boolean) {
    super();
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('loadProgressOf (the /api/events load.progress payload)', () => {
  it('reads `progress` in [0, 1] of load.progress events only', () => {
    assert.equal(loadProgressOf('load.progress', '{"model":"m:latest","time":"t","progress":0.5}'), 0.5);
    assert.equal(loadProgressOf('load.progress', '{"progress":0}'), 0);
    assert.equal(loadProgressOf('load.progress', '{"progress":1}'), 1);
    assert.equal(loadProgressOf('load.ready', '{"progress":0.5}'), undefined);
    assert.equal(loadProgressOf(undefined, '{"progress":0.5}'), undefined);
    assert.equal(loadProgressOf('load.progress', '{"progress":1.5}'), undefined);
    assert.equal(loadProgressOf('load.progress', '{"progress":"50%"}'), undefined);
    assert.equal(loadProgressOf('load.progress', 'not json'), undefined);
  });
});

describe('Spinner (Ollama progress/spinner.go)', () => {
  it('draws a frame at once, the message before the frame, and clears its line when stopped', async () => {
    const out = new Capture(true);
    const spinner = new Spinner(out);
    assert.equal(out.text, `\x1b[?25l\x1b[1G${SPINNER_FRAMES[0]} \x1b[K`);
    spinner.setMessage('loading model 7%');
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(out.text.includes(`\x1b[1Gloading model 7% ${SPINNER_FRAMES[1]} \x1b[K`), JSON.stringify(out.text));
    spinner.stop();
    spinner.stop();
    assert.ok(out.text.endsWith('\x1b[2K\x1b[1G\x1b[?25h'));
    assert.equal(out.text.split('\x1b[2K').length, 2, 'cleared once');
  });

  it('startLoadIndicator: nothing on a stream that is not a terminal', async () => {
    const out = new Capture(false);
    // Port 9 (discard) on loopback: nothing listens; no request is made anyway.
    const { indicator, ready } = startLoadIndicator(connect({ OLLAMA_HOST: '127.0.0.1:9' }), 'm', out);
    await ready;
    assert.equal(indicator, undefined);
    assert.equal(out.text, '');
  });

  it('startLoadIndicator: a server that cannot be reached leaves the plain spinner', async () => {
    const out = new Capture(true);
    const { indicator, ready } = startLoadIndicator(connect({ OLLAMA_HOST: '127.0.0.1:9' }), 'm', out);
    await ready;
    indicator?.stop();
    assert.ok(out.text.startsWith(`\x1b[?25l\x1b[1G${SPINNER_FRAMES[0]} `));
    assert.ok(!out.text.includes('%'));
  });
});
