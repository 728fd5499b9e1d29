import { ApiProperty } from '@nestjs/swagger';
import { PaginationDto } from '../../../platform/http/pagination';
import { DELIVERY_STATUSES } from '../schemas/webhook.schemas';
import { EVENT_TYPES } from '../../events';

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
