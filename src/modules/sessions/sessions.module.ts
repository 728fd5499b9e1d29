import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { HistoryImportService } from './history-import.service';
import { SessionPolicy } from './session-policy';
import { SessionsController } from './sessions.controller';
import { SessionsRepository } from './sessions.repository';
import { SessionShapes } from './session-rows';
import { TurnsRepository } from './turns.repository';
import { TokenUsageRepository } from './token-usage.repository';
import { SessionReader } from './session-reader';
import { TokenUsageReader } from './token-usage-reader';
import { SessionsService } from './sessions.service';
import { SessionAccess } from './session-access.service';
import { SessionMessages } from './session-messages.service';
import { SessionTurns } from './session-turns.service';
import { ServerLogs } from './server-logs.service';
import { SessionRetentionJob } from './jobs/session-retention.job';

/** Sessions and their messages. The agent's side of a turn is the agent channel's (it imports this module: SessionTurns). */
@Module({
  imports: [AuthModule],
  controllers: [SessionsController],
  providers: [
    SessionsRepository,
    SessionShapes,
    TurnsRepository,
    TokenUsageRepository,
    SessionsService,
    SessionAccess,
    SessionMessages,
    SessionTurns,
    ServerLogs,
    HistoryImportService,
    SessionPolicy,
    SessionReader,
    TokenUsageReader,
    SessionRetentionJob,
  ],
  exports: [SessionsService, SessionMessages, SessionTurns, SessionAccess, SessionPolicy, ServerLogs, SessionReader, TokenUsageReader, HistoryImportService],
})
export class SessionsModule {}
