import { Global, Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { DurableListeners } from './durable-listeners';
import { EventLog } from './event-log';
import { LiveEvents } from './live-events';
import { JobsModule } from '../jobs';

/** The event log and its listeners: this instance's (`@nestjs/event-emitter`) and the durable ones; and the live-only events. */
@Global()
@Module({
  imports: [JobsModule, EventEmitterModule.forRoot({ wildcard: false, ignoreErrors: false })],
  providers: [EventLog, DurableListeners, LiveEvents],
  exports: [EventLog, DurableListeners, LiveEvents],
})
export class EventsModule {}
