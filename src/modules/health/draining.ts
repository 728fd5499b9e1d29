import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { INSTANCE_DRAINING } from '../../platform/events';
import { DomainError, ErrorKind } from '../../platform/http/domain-error';

/** The instance is stopping: a load balancer should send elsewhere, a client try again (another instance answers). */
class ShuttingDownError extends DomainError<'shutting_down'> {
  readonly kind = ErrorKind.Unavailable;
  override retryAfterSeconds = 1;
}

export const shuttingDown = () => new ShuttingDownError('shutting_down', 'This instance is stopping: try again, another instance will answer.');

/**
 * The instance's way out, in two steps: draining (it still serves, `/healthz` answers 503 so load balancers stop
 * sending, waiting clients are answered), then closed (it stops listening; a request still arriving on an open
 * connection is answered 503 `shutting_down` in the API's error body).
 */
@Injectable()
export class Draining {
  private state: 'serving' | 'draining' | 'closed' = 'serving';

  constructor(private readonly emitter: EventEmitter2) {}

  get draining(): boolean {
    return this.state !== 'serving';
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  begin(): void {
    if (this.state !== 'serving') return;
    this.state = 'draining';
    this.emitter.emit(INSTANCE_DRAINING);
  }

  close(): void {
    this.begin();
    this.state = 'closed';
  }
}
