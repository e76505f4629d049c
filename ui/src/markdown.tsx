import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import cpp from 'highlight.js/lib/languages/cpp';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import typescript from 'highlight.js/lib/languages/typescript';
import { marked } from 'marked';
import { useEffect, useMemo, useRef } from 'preact/hooks';

// A few common languages only (the whole highlight.js would triple the bundle; docs/ui.md "Bundle size").
for (const [name, language] of Object.entries({ bash, cpp, javascript, json, python, typescript })) {
  hljs.registerLanguage(name, language);
}

let lastCostMs = 0;

/** Markdown to HTML that is safe to insert: marked (GitHub flavour), then DOMPurify (no script, no handlers). */
export function renderMarkdown(text: string): string {
  const started = performance.now();
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  const safe = DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
  lastCostMs = performance.now() - started;
  return safe;
}

/** How long the last {@link renderMarkdown} took, ms (it grows with the text: a streaming answer's re-renders pace by it). */
export function markdownCostMs(): number {
  return lastCostMs;
}

/** A message's Markdown, sanitized, with its code blocks highlighted once the text stops changing. */
export function Markdown({ text, streaming }: { text: string; streaming: boolean }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (streaming || !ref.current) return;
    for (const block of ref.current.querySelectorAll<HTMLElement>('pre code')) {
      const language = /language-(\S+)/.exec(block.className)?.[1];
      if (language === undefined || hljs.getLanguage(language)) hljs.highlightElement(block);
    }
  }, [html, streaming]);
  return <div class="markdown" ref={ref} dangerouslySetInnerHTML={{ __html: html }} />;
}
