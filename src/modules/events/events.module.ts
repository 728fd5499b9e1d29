import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { SessionsModule } from '../sessions';
import { AuditLogController } from './audit-log.controller';
import { EventPresenter } from './event-presenter';
import { EventStreams } from './event-streams';
import { EventVisibility } from './event-visibility';
import { EventsController } from './events.controller';
import { EventsService } from './events.service';

/**
 * The public face of the event log: live streams and lists of events, the audit log, and the one
 * public shape of an event (EventPresenter, which webhooks use too).
 */
@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [EventsController, AuditLogController],
  providers: [EventPresenter, EventVisibility, EventStreams, EventsService],
  exports: [EventPresenter, EventVisibility],
})
export class EventsApiModule {}
