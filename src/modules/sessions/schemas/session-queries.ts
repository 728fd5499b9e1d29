import type { ApiSchema } from '../../../platform/http/api-schema';
import { closedObject, SchemaObject } from '../../../platform/http/json-schema';
import { pageQuery } from '../../../platform/http/pagination';
import { ARCHIVED_FILTERS } from '../domain/session-settings';

/** The query strings of the Sessions module's routes: validated like bodies, published as parameters. */
const computerId: SchemaObject = {
  type: 'string',
  maxLength: 64,
  description: 'Ask this computer directly: only sessions connected to it are answered. It must be a computer of your organization, else 404.',
};

export const MESSAGE_ROLE_FILTERS = ['user', 'assistant', 'tool'] as const;
export const MESSAGE_ORDERS = ['oldest', 'newest'] as const;

const WAIT_MS_PATTERN = '^(30000|[12][0-9]{4}|[1-9][0-9]{0,3}|0)$';

export const SESSION_QUERIES: Record<string, SchemaObject> = {
  ListSessionsQuery: pageQuery({
    computerId,
    archived: {
      type: 'string',
      enum: [...ARCHIVED_FILTERS],
      default: 'exclude',
      description:
        'Not in the spec. Sessions whose `sessionSettings.archivedAt` is set: `exclude` (default) leaves them out, `include` lists them with the others, ' +
        '`only` lists only them.',
    },
    tag: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      description: 'Not in the spec. Only sessions with a `sessionSettings.tags` entry of this `name` (exact, case-sensitive).',
    },
  }),
  GetSessionQuery: closedObject([], { computerId }),
  ListMessagesQuery: pageQuery({
    computerId,
    role: { type: 'string', enum: [...MESSAGE_ROLE_FILTERS], description: 'Only messages of this role.' },
    order: {
      type: 'string',
      enum: [...MESSAGE_ORDERS],
      default: 'oldest',
      description:
        'Not in the spec. `oldest` (default): conversation order, oldest first. `newest`: newest first, so a client can show the latest ' +
        'messages and page back through history. A cursor belongs to its order: one from the other order answers 400.',
    },
  }),
  // No length limit on turnId: any string that is not the running turn is 409 turn_not_active, as on the other agent endpoints.
  TurnConversationQuery: pageQuery({ turnId: { type: 'string', description: 'The running turn the caller holds (from its claim).' } }, ['turnId']),
  AwaitToolApprovalQuery: closedObject(['turnId'], {
    turnId: { type: 'string', description: 'The running turn the caller holds (from its claim), which asked for the approval.' },
    waitMs: {
      type: 'string',
      pattern: WAIT_MS_PATTERN,
      'x-problem': 'must be a whole number of milliseconds from 0 to 30000',
      description: 'Wait up to this long (ms, a whole number from 0 to 30000) for the decision when there is none yet. Default 0: answer at once.',
    },
  }),
};

export type ListSessionsQuery = ApiSchema<'ListSessionsQuery'>;
export type GetSessionQuery = ApiSchema<'GetSessionQuery'>;
export type ListMessagesQuery = ApiSchema<'ListMessagesQuery'>;
export type TurnConversationQuery = ApiSchema<'TurnConversationQuery'>;
export type AwaitToolApprovalQuery = ApiSchema<'AwaitToolApprovalQuery'>;
