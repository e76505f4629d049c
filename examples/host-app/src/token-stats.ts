import { Injectable } from '@nestjs/common';
import { GenerationEndInfo, RequestHooks } from 'llamad';

/** What GET /stats reports: token counts per model, and the last generations seen. */
export interface StatsSnapshot {
  generations: number;
  promptTokens: number;
  completionTokens: number;
  byModel: Record<string, { promptTokens: number; completionTokens: number }>;
  last: GenerationEndInfo[];
}

/** A request hook (REQUEST_HOOKS) that records token counts of every generation, whoever started it. */
@Injectable()
export class TokenStats implements RequestHooks {
  private readonly stats: StatsSnapshot = {
    generations: 0,
    promptTokens: 0,
    completionTokens: 0,
    byModel: {},
    last: [],
  };

  onGenerationEnd(info: GenerationEndInfo): void {
    const s = this.stats;
    s.generations++;
    s.promptTokens += info.promptTokens;
    s.completionTokens += info.completionTokens;
    const model = (s.byModel[info.model] ??= { promptTokens: 0, completionTokens: 0 });
    model.promptTokens += info.promptTokens;
    model.completionTokens += info.completionTokens;
    s.last = [...s.last.slice(-9), info];
  }

  snapshot(): StatsSnapshot {
    return structuredClone(this.stats);
  }
}
