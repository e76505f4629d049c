/**
 * Streaming thinking/content splitter, mirroring Ollama's thinking/parser.go (reference §8.6).
 */

enum State {
  /** Looking for the opening tag; only whitespace seen so far. */
  LookingForOpening,
  /** Opening tag seen; eating whitespace before the thinking text. */
  ThinkingStartedEatingWhitespace,
  /** Inside thinking. */
  Thinking,
  /** Closing tag seen; eating whitespace before the content. */
  ThinkingDoneEatingWhitespace,
  /** After thinking (or thinking skipped): everything is content. */
  ThinkingDone,
}

function trimLeftSpace(s: string): string {
  return s.replace(/^[\s\u0085]+/u, '');
}

function overlap(s: string, delim: string): number {
  const max = Math.min(delim.length, s.length);
  for (let i = max; i > 0; i--) if (s.endsWith(delim.slice(0, i))) return i;
  return 0;
}

/**
 * Splits model output into `thinking` and `content` (Ollama thinking.Parser).
 *
 * Leading whitespace before the opening tag is ignored; if the output does not start with the opening tag, all of it
 * is content. Whitespace right after the opening and the closing tags is swallowed. Partial tags at a chunk end are
 * held back until disambiguated. With `startInThinking` (the rendered prompt already ends with the opening tag)
 * parsing begins inside thinking.
 */
export class ThinkingParser {
  private state: State;
  private acc = '';
  /**
   * While looking for the opening tag: the leading whitespace seen so far, moved out of `acc` as it arrives so that
   * each chunk is trimmed once (a long run of whitespace costs O(chunk) per chunk, not a re-trim of all of it). It is
   * released with the text only when the output turns out not to start with the tag.
   */
  private lead = '';

  constructor(
    readonly openTag: string,
    readonly closeTag: string,
    startInThinking = false,
  ) {
    this.state = startInThinking ? State.ThinkingStartedEatingWhitespace : State.LookingForOpening;
  }

  /** Feeds one chunk; returns the thinking and content that are now unambiguous. */
  add(chunk: string): { thinking: string; content: string } {
    this.acc += chunk;
    let thinking = '';
    let content = '';
    for (;;) {
      const [t, c, again] = this.eat();
      thinking += t;
      content += c;
      if (!again) break;
    }
    return { thinking, content };
  }

  /** Ends the stream: flushes held-back text (a partial closing tag stays thinking; otherwise content). */
  finish(): { thinking: string; content: string } {
    const acc = this.acc;
    this.acc = '';
    switch (this.state) {
      case State.Thinking:
        return { thinking: acc, content: '' };
      case State.LookingForOpening: {
        this.state = State.ThinkingDone;
        const trimmed = this.takeLead(acc);
        return { thinking: '', content: trimmed === '' ? '' : this.lead + trimmed };
      }
      case State.ThinkingStartedEatingWhitespace:
      case State.ThinkingDoneEatingWhitespace:
      case State.ThinkingDone:
        return { thinking: '', content: '' };
    }
  }

  /** Whether the parser has left the thinking section (or never entered it). */
  get thinkingDone(): boolean {
    return this.state === State.ThinkingDone || this.state === State.ThinkingDoneEatingWhitespace;
  }

  /**
   * `acc` without its leading whitespace, which (while nothing else has been seen) moves to `lead`: once `acc` starts
   * with other text, `lead` is complete and `acc` is returned unchanged.
   */
  private takeLead(acc: string): string {
    const trimmed = trimLeftSpace(acc);
    if (trimmed.length !== acc.length) this.lead += acc.slice(0, acc.length - trimmed.length);
    return trimmed;
  }

  private eat(): [string, string, boolean] {
    switch (this.state) {
      case State.LookingForOpening: {
        const trimmed = this.takeLead(this.acc);
        this.acc = trimmed;
        if (trimmed.startsWith(this.openTag)) {
          const after = trimLeftSpace(trimmed.split(this.openTag).slice(1).join(this.openTag));
          this.acc = after;
          this.lead = '';
          this.state = after === '' ? State.ThinkingStartedEatingWhitespace : State.Thinking;
          return ['', '', true];
        }
        if (this.openTag.startsWith(trimmed)) return ['', '', false];
        if (trimmed === '') return ['', '', false];
        this.state = State.ThinkingDone;
        const untrimmed = this.lead + this.acc;
        this.acc = '';
        this.lead = '';
        return ['', untrimmed, false];
      }
      case State.ThinkingStartedEatingWhitespace: {
        const trimmed = trimLeftSpace(this.acc);
        this.acc = '';
        if (trimmed === '') return ['', '', false];
        this.state = State.Thinking;
        this.acc = trimmed;
        return ['', '', true];
      }
      case State.Thinking: {
        const acc = this.acc;
        const idx = acc.indexOf(this.closeTag);
        if (idx >= 0) {
          const thinking = acc.slice(0, idx);
          const remaining = trimLeftSpace(acc.slice(idx + this.closeTag.length));
          this.acc = '';
          this.state = remaining === '' ? State.ThinkingDoneEatingWhitespace : State.ThinkingDone;
          return [thinking, remaining, false];
        }
        const ov = overlap(acc, this.closeTag);
        if (ov > 0) {
          this.acc = acc.slice(acc.length - ov);
          return [acc.slice(0, acc.length - ov), '', false];
        }
        this.acc = '';
        return [acc, '', false];
      }
      case State.ThinkingDoneEatingWhitespace: {
        const trimmed = trimLeftSpace(this.acc);
        this.acc = '';
        if (trimmed !== '') this.state = State.ThinkingDone;
        return ['', trimmed, false];
      }
      case State.ThinkingDone: {
        const acc = this.acc;
        this.acc = '';
        return ['', acc, false];
      }
    }
  }
}
