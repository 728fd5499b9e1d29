import { PassThrough } from 'node:stream';
import { Controller, Get, Headers, Logger, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { V0_ERROR } from '../../platform/http/openapi';
import { pageSize } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { AuditLogQuery } from './schemas/event-queries';
import { eventSchemas } from './schemas/event.schemas';
import { AuditFilter, EventsService } from './events.service';

export const NDJSON_TYPE = 'application/x-ndjson';

@ApiTags('Events')
@Controller('api/v0/organization/audit-log')
@Authenticated(Role.Owner, Role.Manager)
export class AuditLogController {
  private readonly logger = new Logger(AuditLogController.name);

  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperation({
    summary: 'Read the audit log',
    description:
      "Who did what, on which object, from where and when: the organization's event log, newest first, each entry an `Event` whose `actor` " +
      "carries the user's email and role then, the credential, the client's address and the request id. Filters: `type`, `actorUserId`, `since`, `until`. " +
      'Paged with `limit` and `cursor`; with `Accept: application/x-ndjson` or `format=ndjson`, every matching entry is streamed as NDJSON instead. ' +
      'Reaches back `EVENT_RETENTION_DAYS`. Messages are not copied into `message.added` entries here.',
  })
  @ApiOkResponse({
    description: 'A page of entries, or all of them as NDJSON.',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['entries', 'pagination'],
          properties: { entries: { type: 'array', items: ref('Event') }, pagination: ref('Pagination') },
        },
      },
      [NDJSON_TYPE]: { schema: { type: 'string', description: 'One `Event` as JSON a line, newest first.' } },
    },
  })
  @ApiBadRequestResponse({ description: 'Invalid filter or page parameter.', schema: V0_ERROR })
  async list(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(eventSchemas, 'AuditLogQuery') query: AuditLogQuery,
    @Headers('accept') accept: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const filter: AuditFilter = {
      types: EventsService.types('type', query.type),
      actorUserId: query.actorUserId?.toLowerCase(),
      since: query.since === undefined ? undefined : parseTime('since', query.since),
      until: query.until === undefined ? undefined : parseTime('until', query.until),
    };
    if (query.format === 'ndjson' || (query.format === undefined && accepts(accept, NDJSON_TYPE))) {
      const out = new PassThrough();
      void reply.header('content-type', `${NDJSON_TYPE}; charset=utf-8`).send(out);
      this.events.exportAudit(principal, filter, out).catch((error: Error) => {
        // Headers are gone: the export stops short, and the client sees it end without its last line's newline or at all.
        this.logger.error({ err: error, organizationId: principal.organizationId }, 'The audit log export failed');
        out.destroy(error);
      });
      return;
    }
    const page = await this.events.audit(principal, filter, { cursor: query.cursor, limit: pageSize(query) });
    await reply.send({ entries: page.items, pagination: page.pagination });
  }
}

function accepts(accept: string | undefined, type: string): boolean {
  return accept !== undefined && accept.split(',').some((part) => part.split(';')[0].trim().toLowerCase() === type);
}

/** Unix ms, or an ISO 8601 date-time with its offset. */
function parseTime(field: string, value: string): Date {
  const time = /^\d{1,15}$/.test(value)
    ? Number(value)
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)
      ? Date.parse(value)
      : NaN;
  if (!Number.isFinite(time) || Math.abs(time) > 8.64e15)
    throw validationError([{ field, message: 'must be Unix ms or an ISO 8601 date-time with its offset (e.g. 2026-01-01T00:00:00Z)' }]);
  return new Date(time);
}
