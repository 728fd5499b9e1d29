import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { eventActorOf, Principal } from '../auth';
import { newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { WorkQueue } from './work-queue';
import { API_MESSAGE_SOURCE, SessionPolicy, SessionsError, SessionsErrorCode, SessionsService, SessionTurns, userContent } from '../sessions';

export type StartedRun = ApiSchema<'AgentRunStarted'>;

/**
 * Runs an agent starts on its own computer (the reference agent's `exec`), recorded while the organization's
 * `cloudSessionSync` is on: a session of the computer's owner routed to the computer, the task its first
 * message, and its turn already taken by the caller, all in one transaction, so that no other agent of the
 * computer can take the run first.
 */
@Injectable()
export class HeadlessSessions {
  constructor(
    private readonly sessions: SessionsService,
    private readonly sessionTurns: SessionTurns,
    private readonly queue: WorkQueue,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
  ) {}

  async start(principal: Principal, input: ApiSchema<'AgentSessionBody'>, idempotent?: IdempotentRequest): Promise<IdempotentResult<StartedRun>> {
    if (principal.credential.kind !== 'computer') {
      throw new SessionsError(SessionsErrorCode.NotAnAgent, "Only a computer's agent token may start a session of its own run.");
    }
    if (!(await this.policy.cloudSessionSync(principal.organizationId))) {
      throw new SessionsError(
        SessionsErrorCode.CloudSessionSyncOff,
        'Your organization keeps the runs agents start on their computers off this server (cloudSessionSync is off): run without recording it.',
      );
    }
    const computerId = principal.credential.computerId;
    const content = userContent({ text: input.text });
    // Read before the transaction: on PGlite's one connection, a read outside it would wait for it.
    const session = await this.sessions.prepare(principal, {
      computerId,
      ...(input.title !== undefined ? { title: input.title } : {}),
      ...(input.sessionSettings !== undefined ? { sessionSettings: input.sessionSettings } : {}),
    });
    const scope = { ...(await this.queue.scopeOf(principal, computerId)), sessionId: session.id };
    return this.idempotency.run(
      principal,
      idempotent,
      async (manager) => {
        await this.sessions.insert(manager, principal, session);
        const added = await this.sessionTurns.addUserMessage(
          {
            sessionId: session.id,
            organizationId: principal.organizationId,
            messageId: newId(),
            computerId,
            authorId: principal.userId,
            source: API_MESSAGE_SOURCE,
            content,
            actor: eventActorOf(principal),
          },
          manager,
        );
        const taken = added ? await this.queue.take(manager, principal, scope) : null;
        if (!taken) throw new Error(`the run's session ${session.id} could not be started`);
        return { session: taken.work.session, work: taken.work };
      },
      201,
    );
  }
}
