import { Global, Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { DomainEventBus } from './domain-event-bus';

/** Domain events between modules, in process (`@nestjs/event-emitter`). */
@Global()
@Module({
  imports: [EventEmitterModule.forRoot({ wildcard: false, ignoreErrors: false })],
  providers: [DomainEventBus],
  exports: [DomainEventBus],
})
export class EventsModule {}
