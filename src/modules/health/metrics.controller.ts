import { Controller, Get, Headers, Res } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { DomainError, ErrorKind } from '../../platform/http/domain-error';
import { Metrics } from '../../platform/metrics';
import { Public } from '../auth';

type MetricsErrorCode = 'metrics_disabled' | 'missing_credentials' | 'invalid_credentials';

class MetricsError extends DomainError<MetricsErrorCode> {
  get kind(): ErrorKind {
    return this.code === 'metrics_disabled' ? ErrorKind.NotFound : ErrorKind.Unauthenticated;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Prometheus's scrape target. Not an API operation (it is Prometheus's text format, for operators), so it is left out
 * of the OpenAPI document and described in docs/deployment.md. Its own token, not an API key: a scraper needs no
 * organization, and no member's key can read another organization's traffic through it. Counted against the
 * anonymous rate limit like any request without an API credential, so guessing is slow too.
 */
@Controller()
export class MetricsController {
  private readonly token: Buffer | null;

  constructor(
    private readonly metrics: Metrics,
    config: AppConfig,
  ) {
    this.token = config.METRICS_TOKEN ? digest(config.METRICS_TOKEN) : null;
  }

  @Get('metrics')
  @Public()
  @ApiExcludeEndpoint()
  async scrape(@Headers('authorization') authorization: string | undefined, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (!this.token) throw new MetricsError('metrics_disabled', 'Metrics are off on this server: set METRICS_TOKEN to serve them here.');
    const [scheme, given] = (authorization ?? '').split(' ');
    if (!given) throw new MetricsError('missing_credentials', 'Send the metrics token as `Authorization: Bearer <METRICS_TOKEN>`.');
    // Both sides hashed first: equal lengths for timingSafeEqual, and nothing of the token's length leaks.
    if (scheme.toLowerCase() !== 'bearer' || !timingSafeEqual(digest(given), this.token)) {
      throw new MetricsError('invalid_credentials', 'The metrics token is not valid.');
    }
    const { contentType, body } = await this.metrics.exposition();
    void reply.type(contentType).header('cache-control', 'no-store');
    return body;
  }
}
