import { Global, Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { DurableListeners } from './durable-listeners';
import { EventLog } from './event-log';
import { JobsModule } from '../jobs';

/** The event log and its listeners: this instance's (`@nestjs/event-emitter`) and the durable ones. */
@Global()
@Module({
  imports: [JobsModule, EventEmitterModule.forRoot({ wildcard: false, ignoreErrors: false })],
  providers: [EventLog, DurableListeners],
  exports: [EventLog, DurableListeners],
})
export class EventsModule {}
