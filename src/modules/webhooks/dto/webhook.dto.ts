import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import { PageQueryDto, PaginationDto } from '../../../platform/http/pagination';
import { EVENT_TYPES } from '../../events';

const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

const URL_RULES =
  'An `https` URL (`http` only for a host the operator lists in `WEBHOOK_ALLOWED_HOSTS`), without credentials or fragment. ' +
  'An IP address that is not public (loopback, private, link-local, cloud metadata, in any spelling) or this server is refused here (400 `webhook_url_refused`); ' +
  'a host name is resolved at each delivery, and an attempt to a name resolving to such an address is refused and logged in the delivery log.';

export class CreateWebhookDto {
  @ApiProperty({ maxLength: 2048, example: 'https://hooks.example.com/agent-platform', description: URL_RULES })
  @IsString()
  @MaxLength(2048)
  url: string;

  @ApiPropertyOptional({
    type: [String],
    enum: EVENT_TYPES,
    maxItems: EVENT_TYPES.length,
    description: 'The event types to send. Omitted or empty: every type, including types added later.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(EVENT_TYPES.length)
  @IsIn(EVENT_TYPES, { each: true, message: 'each value must be a known event type (see GET /api/v0/organization/webhooks docs)' })
  eventTypes?: string[];

  @ApiPropertyOptional({ default: true, description: 'A disabled webhook is sent nothing, and events meanwhile are not queued for it.' })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500 })
  @IsOptional()
  @ValidateIf((_, value) => value !== null)
  @IsString()
  @MaxLength(500)
  description?: string | null;
}

export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 2048, description: URL_RULES })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: EVENT_TYPES, maxItems: EVENT_TYPES.length, description: 'Empty: every type.' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(EVENT_TYPES.length)
  @IsIn(EVENT_TYPES, { each: true, message: 'each value must be a known event type' })
  eventTypes?: string[];

  @ApiPropertyOptional({ description: '`true` also clears a disabling by the server (`disabledReason`) and its record of failures.' })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500 })
  @IsOptional()
  @ValidateIf((_, value) => value !== null)
  @IsString()
  @MaxLength(500)
  description?: string | null;
}

export class ListDeliveriesQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES, description: 'Only deliveries in this state.' })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES)
  status?: (typeof DELIVERY_STATUSES)[number];
}

export class WebhookView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  url: string;

  @ApiProperty({ type: String, nullable: true })
  description: string | null;

  @ApiProperty({ type: [String], enum: EVENT_TYPES, description: 'Empty: every type.' })
  eventTypes: string[];

  @ApiProperty()
  enabled: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['endpoint_failing'],
    description: '`endpoint_failing`: the server disabled it after its deliveries failed for `WEBHOOK_DISABLE_AFTER_MS` (a `webhook.disabled` event said so).',
  })
  disabledReason: string | null;

  @ApiProperty({
    example: 'whsec_…Qk8=',
    description: 'The signing secret, masked: only its last four characters. The secret itself is shown once, on create and rotate.',
  })
  secretHint: string;

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms of the first failed attempt since the last success; null while healthy.' })
  failingSince: number | null;

  @ApiProperty({ description: 'Unix ms.' })
  createdAt: number;

  @ApiProperty({ description: 'Unix ms.' })
  updatedAt: number;
}

export class WebhookWithSecretView extends WebhookView {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret (Standard Webhooks: `whsec_` and base64 of 32 bytes). Shown in this answer only: keep it now.',
  })
  secret: string;
}

export class WebhookListView {
  @ApiProperty({ type: [WebhookView] })
  webhooks: WebhookView[];

  @ApiProperty({ type: PaginationDto })
  pagination: PaginationDto;
}

export class AttemptView {
  @ApiProperty({ description: 'Unix ms when it started.' })
  at: number;

  @ApiProperty({ type: Number, nullable: true, description: "The receiver's status code; null when none came (refused, unreachable, timed out)." })
  statusCode: number | null;

  @ApiProperty({ description: 'How long it took, in ms.' })
  durationMs: number;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why it failed (`answered 500`, `did not answer within ...`, `refused: ...`); null when delivered.',
  })
  error: string | null;
}

export class DeliveryView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'uuid' })
  webhookId: string;

  @ApiProperty({ format: 'uuid', description: "The event's id, sent as `webhook-id`: the same on every attempt, for de-duplication." })
  eventId: string;

  @ApiProperty({ description: "The event's number in the organization's log." })
  eventSeq: number;

  @ApiProperty({ enum: EVENT_TYPES })
  eventType: string;

  @ApiProperty({ enum: DELIVERY_STATUSES, description: '`pending` (to be tried, or being tried), `delivered` (a 2xx answer), `failed` (every retry failed).' })
  status: string;

  @ApiProperty({ type: [AttemptView], description: 'Every attempt, oldest first (the last 50).' })
  attempts: AttemptView[];

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms of the next attempt while pending; null once delivered or failed.' })
  nextAttemptAt: number | null;

  @ApiProperty({ description: 'Unix ms.' })
  createdAt: number;

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms.' })
  deliveredAt: number | null;
}

export class DeliveryListView {
  @ApiProperty({ type: [DeliveryView] })
  deliveries: DeliveryView[];

  @ApiProperty({ type: PaginationDto })
  pagination: PaginationDto;
}
