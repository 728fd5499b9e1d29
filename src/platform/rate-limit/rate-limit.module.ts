import { Module } from '@nestjs/common';
import { RateLimits } from './rate-limits';

/** Per-client request rate limits, checked at the request edge (see app.factory). */
@Module({ providers: [RateLimits], exports: [RateLimits] })
export class RateLimitModule {}
