import { PassThrough } from 'node:stream';
import { Controller, Get, Headers, Param, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiGoneResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { pageSize, Pagination } from '../../platform/http/pagination';
import { Authenticated, CurrentPrincipal, Principal } from '../auth';
import { sessionNotFound } from '../sessions';
import { EventsError, EventsErrorCode } from './domain/events.errors';
import { EventStreamQuery } from './schemas/event-queries';
import { eventSchemas } from './schemas/event.schemas';
import { PublicEvent } from './event-presenter';
import { MESSAGE_DELTA } from './event-streams';
import { EventsService } from './events.service';
import { PathIds } from '../../platform/http/path-ids';

export const EVENT_STREAM_TYPE = 'text/event-stream';

const STREAM_DESCRIPTION =
  'With `Accept: text/event-stream`: server-sent events, one per event: `id: <seq>`, `event: <type>`, `data: <the Event as JSON>`. ' +
  'Replays the events after `Last-Event-ID` (or `after`) from the log, then sends each new one as it is numbered (right after its commit), in `seq` order with no gap and no duplicate; ' +
  'without either it starts with the next event. A comment line (`: heartbeat`) comes every 15 s (`EVENT_STREAM_HEARTBEAT_MS`). ' +
  'Streams also carry `message.delta` (schema `MessageDeltaEvent`; not in the spec, clients may ignore it): what a model is writing, live, as its agent sends it ' +
  "(`data.kind`: `text`, `thinking`, `tool_input`, or `tool_output` for a running tool's output), " +
  'without an `id:` line (it is not in the log, so `Last-Event-ID` and resuming are unaffected, and a list never has it); the stored message stays whole and final. ' +
  'Only to callers who may read the session, where the organization keeps message history; `types` may name it. ' +
  'The stream ends when the server shuts down or the credential stops being valid (key revoked, user removed or given another role): reconnect with `Last-Event-ID`. ' +
  'Otherwise: the same events as a JSON page, oldest first, from `after` (default: the oldest kept) or `cursor`; a page may hold fewer than `limit` ' +
  "when events you may not see were skipped, and `hasMore` still says whether to go on. `seq` numbers the organization's log, so a session's or a filtered list skips numbers.";

const streamOk = (description: string) =>
  ApiOkResponse({
    description,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['events', 'pagination'],
          properties: { events: { type: 'array', items: ref('Event') }, pagination: ref('Pagination') },
        },
      },
      [EVENT_STREAM_TYPE]: {
        schema: { type: 'string', description: 'Server-sent events; each `data` line is one `Event` (see its schema).' },
        example:
          'retry: 2000\n: connected\n\nid: 42\nevent: message.added\ndata: {"id":"0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10","seq":42,"type":"message.added",...}\n\n: heartbeat\n\n',
      },
    },
  });

const lastEventId = ApiHeader({
  name: 'Last-Event-ID',
  required: false,
  description: 'Streams: resume after this `seq` (what EventSource sends when it reconnects); wins over `after`.',
});

@ApiTags('Events')
@Controller('api/v0')
@Authenticated()
@ApiBadRequestResponse({
  description: 'Invalid query (`after`, `types`, `limit`, `cursor`), or a `Last-Event-ID` that is not a sequence number of the log (`invalid_event_id`).',
  schema: V0_ERROR,
})
@ApiGoneResponse({
  description: 'The resume point is older than the oldest event kept (`EVENT_RETENTION_DAYS`): `event_expired`, with `metadata.oldestId`.',
  schema: V0_ERROR,
})
@PathIds({ sessionId: sessionNotFound })
@ApiErrorExamples(
  sessionNotFound(EXAMPLE_ID),
  new EventsError(
    EventsErrorCode.EventExpired,
    'The events after 42 are no longer kept (EVENT_RETENTION_DAYS): the oldest is 1187. Resume after 1186, or from 0, and reconcile what you missed from the objects themselves.',
    { oldestId: 1187 },
  ),
  new EventsError(
    EventsErrorCode.TooManyStreams,
    'This credential has already 10 event streams open on this server (EVENT_STREAMS_PER_CREDENTIAL). Close one, or retry after 5 s.',
    { quota: 'EVENT_STREAMS_PER_CREDENTIAL', limit: 10 },
  ),
)
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get('events')
  @ApiOperation({
    summary: "Stream or list the organization's events",
    description:
      `${STREAM_DESCRIPTION} Owners and managers see every event; members and guests see those of the sessions they may read, of their own computers and API keys, ` +
      'and readiness reports (see docs/api.md, Events).',
  })
  @lastEventId
  @streamOk("The organization's events: a stream, or a page.")
  @ApiTooManyRequestsResponse({
    description: 'Streams: too many open at once for your credential or organization (`too_many_streams`, `EVENT_STREAMS_PER_*`); or a rate limit.',
    schema: V0_ERROR,
  })
  async organization(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(eventSchemas, 'EventStreamQuery') query: EventStreamQuery,
    @Headers('accept') accept: string | undefined,
    @Headers('last-event-id') lastId: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.answer(principal, {}, query, accept, lastId, reply);
  }

  @Get('sessions/:sessionId/events')
  @ApiOperation({ summary: "Stream or list a session's events", description: `${STREAM_DESCRIPTION} Anyone who may read the session may read its events.` })
  @lastEventId
  @streamOk("The session's events: a stream, or a page.")
  @ApiNotFoundResponse({ description: "No such session in your organization, or one you may not read (another organization's included).", schema: V0_ERROR })
  @ApiTooManyRequestsResponse({
    description: 'Streams: too many open at once for your credential or organization (`too_many_streams`, `EVENT_STREAMS_PER_*`); or a rate limit.',
    schema: V0_ERROR,
  })
  async session(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @QuerySchema(eventSchemas, 'EventStreamQuery') query: EventStreamQuery,
    @Headers('accept') accept: string | undefined,
    @Headers('last-event-id') lastId: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.answer(principal, { sessionId }, query, accept, lastId, reply);
  }

  private async answer(
    principal: Principal,
    scope: { sessionId?: string },
    query: EventStreamQuery,
    accept: string | undefined,
    lastId: string | undefined,
    reply: FastifyReply,
  ): Promise<void> {
    const types = EventsService.types('types', query.types, [MESSAGE_DELTA]);
    const after = query.after === undefined ? undefined : Number(query.after);
    if (wantsStream(accept)) {
      const resume = lastId !== undefined ? parseLastEventId(lastId) : after;
      await this.events.openStream(principal, { ...scope, types }, resume, () => {
        const out = new PassThrough();
        // Proxies must pass each event on at once (nginx buffers otherwise).
        void reply.header('content-type', `${EVENT_STREAM_TYPE}; charset=utf-8`).header('x-accel-buffering', 'no').send(out);
        return out;
      });
      return;
    }
    const page = await this.events.list(principal, { ...scope, types }, { after, cursor: query.cursor, limit: pageSize(query) });
    const body: { events: PublicEvent[]; pagination: Pagination } = { events: page.items, pagination: page.pagination };
    await reply.send(body);
  }
}

/** Whether the client asked for server-sent events (EventSource sends exactly `text/event-stream`). */
export function wantsStream(accept: string | undefined): boolean {
  return accept !== undefined && accept.split(',').some((part) => part.split(';')[0].trim().toLowerCase() === EVENT_STREAM_TYPE);
}

function parseLastEventId(value: string): number {
  const trimmed = value.trim();
  if (!/^(0|[1-9][0-9]{0,14})$/.test(trimmed)) {
    throw new EventsError(EventsErrorCode.InvalidEventId, 'Last-Event-ID: must be the id (`seq`) of an event this API sent.', { field: 'Last-Event-ID' });
  }
  return Number(trimmed);
}
