import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrorExamples, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { eventTypesTable } from '../events';
import { DeliveryListView, DeliveryView, WebhookListView, WebhookView, WebhookWithSecretView } from './schemas/webhook-views';
import { pageSize } from '../../platform/http/pagination';
import { CreateWebhookInput, ListDeliveriesQuery, UpdateWebhookInput, webhookSchemas } from './schemas/webhook.schemas';
import { DeliveryRow, WebhookRow } from './webhooks.repository';
import { MAX_WEBHOOKS_PER_ORGANIZATION, WebhooksService } from './webhooks.service';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { PathIds } from '../../platform/http/path-ids';
import { deliveryNotFound, tooManyWebhooks, webhookDisabled, webhookNotFound } from './domain/webhook.errors';

const NOT_FOUND = { description: '`webhook_not_found`: no such webhook in your organization.', schema: V0_ERROR };
const DELIVERY =
  'Each event is POSTed as JSON, the `Event` the streams send (see the event catalogue), with the Standard Webhooks headers `webhook-id` (the event id: ' +
  'the same on every attempt, for de-duplication), `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature` (`v1,` and the base64 ' +
  "HMAC-SHA256, keyed with the secret's base64-decoded bytes, of `{webhook-id}.{webhook-timestamp}.{body}`). A 2xx answer within `WEBHOOK_TIMEOUT_MS` " +
  'delivers it; anything else (another status, a redirect, a timeout, a network error) is retried with exponential backoff and jitter for about a day ' +
  '(`WEBHOOK_RETRY_SCHEDULE_MS`), then the delivery is failed. At least once, in no guaranteed order. A webhook failing without a success for ' +
  '`WEBHOOK_DISABLE_AFTER_MS` (3 days) is disabled, with a `webhook.disabled` event.';

/** The organization's webhooks (added; the spec has none), for its owners and managers. */
@ApiTags('Webhooks')
@Controller('api/v0/organization/webhooks')
@Authenticated(Role.Owner, Role.Manager)
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({ webhookId: webhookNotFound, deliveryId: (id, { webhookId }) => deliveryNotFound(webhookId, id) })
@ApiErrorExamples(webhookNotFound(EXAMPLE_ID))
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @ApiOperation({
    summary: 'Create a webhook',
    description: `Events committed from now on are sent to \`url\`. The signing secret is in this answer only. ${DELIVERY}\n\nEvent types:\n\n${eventTypesTable()}`,
  })
  @ApiCreatedResponse({ schema: ref('WebhookWithSecretView') })
  @ApiBadRequestResponse({
    description: '`validation_failed`, or `webhook_url_refused`: the URL breaks the address rules (`metadata.reason` says which).',
    schema: V0_ERROR,
  })
  @ApiConflictResponse({ description: '`too_many_webhooks`: the organization has 50.', schema: V0_ERROR })
  @ApiErrorExamples(tooManyWebhooks(MAX_WEBHOOKS_PER_ORGANIZATION))
  @ApiBody({ schema: ref('CreateWebhookBody') })
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body(webhookSchemas.pipe('CreateWebhookBody')) body: CreateWebhookInput,
  ): Promise<WebhookWithSecretView> {
    const { webhook, secret } = await this.webhooks.create(principal, body);
    return { ...toWebhookView(webhook), secret };
  }

  @Get()
  @ApiOperation({ summary: 'List webhooks', description: 'Newest first. Secrets are masked (`secretHint`).' })
  @ApiOkResponse({ schema: ref('WebhookListView') })
  async list(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(webhookSchemas, 'ListWebhooksQuery') query: ApiSchema<'ListWebhooksQuery'>,
  ): Promise<WebhookListView> {
    const page = await this.webhooks.list(principal, query.cursor, pageSize(query));
    return { webhooks: page.items.map(toWebhookView), pagination: page.pagination };
  }

  @Get(':webhookId')
  @ApiOperation({ summary: 'Read a webhook', description: 'Its secret is masked (`secretHint`): it is shown only on create and rotate.' })
  @ApiOkResponse({ schema: ref('WebhookView') })
  @ApiNotFoundResponse(NOT_FOUND)
  async get(@CurrentPrincipal() principal: Principal, @Param('webhookId') id: string): Promise<WebhookView> {
    return toWebhookView(await this.webhooks.get(principal, id));
  }

  @Patch(':webhookId')
  @ApiOperation({
    summary: 'Change a webhook',
    description:
      'Changes the fields given. `enabled: true` re-enables a webhook the server disabled; deliveries still pending resume, events of the disabled time are not sent.',
  })
  @ApiOkResponse({ schema: ref('WebhookView') })
  @ApiBadRequestResponse({ description: '`validation_failed` or `webhook_url_refused`.', schema: V0_ERROR })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiBody({ schema: ref('UpdateWebhookBody') })
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('webhookId') id: string,
    @Body(webhookSchemas.pipe('UpdateWebhookBody')) body: UpdateWebhookInput,
  ): Promise<WebhookView> {
    return toWebhookView(await this.webhooks.update(principal, id, body));
  }

  @Delete(':webhookId')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete a webhook', description: 'Nothing more is sent to it, pending retries included; its delivery log goes with it.' })
  @ApiOkResponse({ schema: ref('WebhookView') })
  @ApiNotFoundResponse(NOT_FOUND)
  async delete(@CurrentPrincipal() principal: Principal, @Param('webhookId') id: string): Promise<WebhookView> {
    return toWebhookView(await this.webhooks.delete(principal, id));
  }

  @Post(':webhookId/rotate-secret')
  @HttpCode(200)
  @ApiOperation({ summary: "Rotate a webhook's secret", description: 'A new secret, in this answer only; attempts from now on are signed with it alone.' })
  @ApiOkResponse({ schema: ref('WebhookWithSecretView') })
  @ApiNotFoundResponse(NOT_FOUND)
  async rotate(@CurrentPrincipal() principal: Principal, @Param('webhookId') id: string): Promise<WebhookWithSecretView> {
    const { webhook, secret } = await this.webhooks.rotateSecret(principal, id);
    return { ...toWebhookView(webhook), secret };
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({
    summary: "List a webhook's deliveries",
    description:
      "Newest first: each event sent or to be sent, with every attempt (status code, duration, error) and the next attempt's time. Kept for `EVENT_RETENTION_DAYS`.",
  })
  @ApiOkResponse({ schema: ref('DeliveryListView') })
  @ApiNotFoundResponse(NOT_FOUND)
  async deliveries(
    @CurrentPrincipal() principal: Principal,
    @Param('webhookId') id: string,
    @QuerySchema(webhookSchemas, 'ListDeliveriesQuery') query: ListDeliveriesQuery,
  ): Promise<DeliveryListView> {
    const page = await this.webhooks.deliveries(principal, id, query.status, query.cursor, pageSize(query));
    return { deliveries: page.items.map(toDeliveryView), pagination: page.pagination };
  }

  @Post(':webhookId/deliveries/:deliveryId/redeliver')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send a delivery again',
    description:
      'Queues it now, delivered or failed alike, with a fresh schedule of retries; the same `webhook-id`, so a receiver that de-duplicates ignores it.',
  })
  @ApiOkResponse({ schema: ref('DeliveryView') })
  @ApiNotFoundResponse({ description: '`webhook_not_found` or `webhook_delivery_not_found`.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`webhook_disabled`: enable the webhook first.', schema: V0_ERROR })
  @ApiErrorExamples(deliveryNotFound(EXAMPLE_ID, EXAMPLE_ID), webhookDisabled(EXAMPLE_ID))
  async redeliver(@CurrentPrincipal() principal: Principal, @Param('webhookId') id: string, @Param('deliveryId') deliveryId: string): Promise<DeliveryView> {
    return toDeliveryView(await this.webhooks.redeliver(principal, id, deliveryId));
  }
}

function toWebhookView(webhook: WebhookRow): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    description: webhook.description,
    eventTypes: webhook.eventTypes,
    enabled: webhook.enabled,
    disabledReason: webhook.disabledReason,
    secretHint: webhook.secretHint,
    failingSince: webhook.failingSince?.getTime() ?? null,
    createdAt: webhook.createdAt.getTime(),
    updatedAt: webhook.updatedAt.getTime(),
  };
}

function toDeliveryView(delivery: DeliveryRow): DeliveryView {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    eventId: delivery.eventId,
    eventSeq: delivery.eventSeq,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    nextAttemptAt: delivery.status === 'pending' ? (delivery.nextAttemptAt?.getTime() ?? null) : null,
    createdAt: delivery.createdAt.getTime(),
    deliveredAt: delivery.deliveredAt?.getTime() ?? null,
  };
}
