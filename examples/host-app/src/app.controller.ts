import { Controller, Get, Inject, Query } from '@nestjs/common';
import { REQUEST_HOOKS } from 'llamad';
import { DemoService } from './demo.service';
import { StatsSnapshot, TokenStats } from './token-stats';

/** The host's own routes, next to /llm. */
@Controller()
export class AppController {
  constructor(
    private readonly demo: DemoService,
    @Inject(REQUEST_HOOKS) private readonly stats: TokenStats,
  ) {}

  /** Token counts recorded by the request hook. */
  @Get('stats')
  getStats(): StatsSnapshot {
    return this.stats.snapshot();
  }

  /** `?model=<name>&max=3`: the first `max` chunks of a chat streamed through the facade. */
  @Get('demo-stream')
  async demoStream(@Query('model') model = 'tiny', @Query('max') max = '3') {
    const chunks = await this.demo.firstChunks(model, Number(max));
    return { count: chunks.length, chunks };
  }
}
