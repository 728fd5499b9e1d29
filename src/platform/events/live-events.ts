import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { PgListener } from '../database/pg-listener';
import { Sql } from '../database/sql';

/** The PostgreSQL channel of live-only events, apart from the log's (whose announcements are small and frequent). */
export const LIVE_EVENTS_CHANNEL = 'agent_platform_live';
/**
 * The most text, as JSON, one NOTIFY carries: PostgreSQL refuses payloads of 8000 bytes and more, and the rest of
 * the note (ids, step, kind) takes under 300, besides a tool call's id and name (the text makes room for them).
 * Longer text goes in several notes, in order.
 */
export const NOTIFY_TEXT_BYTES = 7_000;

/** What a delta carries: the answer's text, the model's thinking, a tool call's arguments, or a running tool's output. */
export const MESSAGE_DELTA_KINDS = ['text', 'thinking', 'tool_input', 'tool_output'] as const;
export type MessageDeltaKind = (typeof MESSAGE_DELTA_KINDS)[number];
/** The kinds that belong to a tool call, and carry its id and name. */
export const TOOL_DELTA_KINDS: readonly MessageDeltaKind[] = ['tool_input', 'tool_output'];

/** A piece of what a model is writing in a turn, or of its tool's output: for live streams only, never stored, numbered or delivered later. */
export interface MessageDelta {
  organizationId: string;
  sessionId: string;
  turnId: string;
  /** The model call within the turn. */
  step: number;
  kind: MessageDeltaKind;
  /** The tool call of a `tool_input` or `tool_output` delta. */
  toolUseId?: string;
  toolName?: string;
  text: string;
  /** Unix ms. */
  occurredAt: number;
}

/**
 * Events that exist only while they happen (`message.delta`): emitted to this instance's streams at
 * once and, on PostgreSQL, to the other instances' with NOTIFY, on a channel of their own. Nothing
 * is written: a stream that was not open misses them, and `Last-Event-ID` never names one.
 */
@Injectable()
export class LiveEvents implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LiveEvents.name);
  private readonly instanceId = randomUUID();
  private listener: PgListener | null = null;
  /** `delta` (MessageDelta), from this instance or another. */
  readonly emitter = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.engine !== 'postgres') return;
    // Deltas sent while the connection was down are gone, as deltas may be: nothing to look up again.
    this.listener = new PgListener(this.dataSource, LIVE_EVENTS_CHANNEL, { onNotify: (payload) => this.onNote(payload), onResumed: () => undefined });
    await this.listener.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.listener?.close();
    this.listener = null;
  }

  /** Sends the delta to every open stream, here and on the other instances. */
  async publish(delta: MessageDelta): Promise<void> {
    this.emitter.emit('delta', delta);
    if (this.config.engine !== 'postgres') return;
    const tool = delta.toolUseId !== undefined ? { c: delta.toolUseId, n: delta.toolName } : {};
    const room = NOTIFY_TEXT_BYTES - Buffer.byteLength(JSON.stringify(tool));
    for (const text of piecesOf(delta.text, room)) {
      const note = {
        i: this.instanceId,
        o: delta.organizationId,
        s: delta.sessionId,
        u: delta.turnId,
        p: delta.step,
        k: delta.kind,
        ...tool,
        t: text,
        at: delta.occurredAt,
      };
      await this.sql.query('live.notify', 'SELECT pg_notify($1, $2)', [LIVE_EVENTS_CHANNEL, JSON.stringify(note)]);
    }
  }

  private onNote(payload: string): void {
    let note: { i?: unknown; o?: unknown; s?: unknown; u?: unknown; p?: unknown; k?: unknown; c?: unknown; n?: unknown; t?: unknown; at?: unknown };
    try {
      note = JSON.parse(payload) as typeof note;
    } catch {
      this.logger.warn('A live event note that is not JSON was ignored');
      return;
    }
    if (note.i === this.instanceId) return;
    const { o, s, u, p, k = 'text', c, n, t, at } = note;
    if (typeof o !== 'string' || typeof s !== 'string' || typeof u !== 'string' || typeof p !== 'number' || typeof t !== 'string') return;
    if (!MESSAGE_DELTA_KINDS.includes(k as MessageDeltaKind)) return;
    const kind = k as MessageDeltaKind;
    const tool = TOOL_DELTA_KINDS.includes(kind) ? (typeof c === 'string' && typeof n === 'string' ? { toolUseId: c, toolName: n } : null) : {};
    if (!tool) return;
    const delta: MessageDelta = {
      organizationId: o,
      sessionId: s,
      turnId: u,
      step: p,
      kind,
      ...tool,
      text: t,
      occurredAt: typeof at === 'number' ? at : Date.now(),
    };
    this.emitter.emit('delta', delta);
  }
}

/** `text` in consecutive pieces of at most `maxJsonBytes` each once JSON-encoded (escapes counted), never cutting a character. */
export function piecesOf(text: string, maxJsonBytes: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  let size = 0;
  for (let i = 0; i < text.length;) {
    const code = text.codePointAt(i)!;
    const width = code > 0xffff ? 2 : 1;
    const bytes = Buffer.byteLength(JSON.stringify(String.fromCodePoint(code))) - 2;
    if (size + bytes > maxJsonBytes && i > start) {
      pieces.push(text.slice(start, i));
      start = i;
      size = 0;
    }
    size += bytes;
    i += width;
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces;
}
