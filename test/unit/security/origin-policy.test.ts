import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_ALLOWED_ORIGINS, OriginPolicy } from '../../../src/security';

// reference/ollama-api.md §1.2.
describe('OriginPolicy', () => {
  it('allows the default localhost family and app schemes, nothing else', () => {
    const policy = new OriginPolicy([]);
    assert.equal(DEFAULT_ALLOWED_ORIGINS.length, 17);
    for (const origin of [
      'http://localhost',
      'https://localhost:8443',
      'http://127.0.0.1:3000',
      'HTTP://LOCALHOST:3000',
      'http://0.0.0.0',
      'app://anything',
      'file://',
      'tauri://localhost',
      'vscode-webview://abc',
      'vscode-file://vscode-app',
    ]) {
      assert.ok(policy.allows(origin), origin);
    }
    for (const origin of [
      'https://evil.example',
      'http://localhost.evil.example',
      'http://127.0.0.2',
      'null',
      'chrome-extension://abc',
      '',
    ]) {
      assert.ok(!policy.allows(origin), origin);
    }
    assert.equal(policy.allowsAll, false);
  });

  it('adds OLLAMA_ORIGINS entries: exact, wildcard anywhere, a lone * for everything', () => {
    const policy = new OriginPolicy(['https://My.App.example', 'https://*.corp.example', 'chrome-extension://*']);
    assert.ok(policy.allows('https://my.app.example'));
    assert.ok(policy.allows('https://a.corp.example'));
    assert.ok(policy.allows('https://a.b.corp.example'));
    assert.ok(!policy.allows('https://corp.example'));
    assert.ok(!policy.allows('https://a.corp.example.evil'));
    assert.ok(policy.allows('chrome-extension://abcdef'));
    const all = new OriginPolicy(['*']);
    assert.ok(all.allowsAll);
    assert.ok(all.allows('https://anything.example'));
  });

  it('treats regex characters in entries literally', () => {
    const policy = new OriginPolicy(['https://a.b']);
    assert.ok(!policy.allows('https://axb'));
  });
});
