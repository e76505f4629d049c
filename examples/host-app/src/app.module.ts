import { Module } from '@nestjs/common';
import { AUTHORIZER, LlamadModule, loadConfig, REQUEST_HOOKS } from 'llamad';
import { AppController } from './app.controller';
import { DemoService } from './demo.service';
import { TenantAuthorizer } from './tenant.authorizer';
import { TokenStats } from './token-stats';

@Module({
  imports: [
    LlamadModule.forRoot({
      prefix: '/llm',
      // The daemon's environment handling (OLLAMA_MODELS, OLLAMA_NUM_PARALLEL, …); the library reads no env itself.
      config: loadConfig(process.env),
      providers: [
        { provide: AUTHORIZER, useClass: TenantAuthorizer },
        { provide: REQUEST_HOOKS, useClass: TokenStats },
      ],
    }),
  ],
  controllers: [AppController],
  providers: [DemoService],
})
export class AppModule {}
