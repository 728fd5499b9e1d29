import { Writable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { createPino, PinoLogger } from './logging';

/** A logger writing JSON lines into an array, as Nest's own Logger calls it. */
function capture(level = 'debug'): { lines: Record<string, unknown>[]; logger: PinoLogger } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const config = { LOG_LEVEL: level, logFormat: 'json' } as unknown as AppConfig;
  return { lines, logger: new PinoLogger(createPino(config, sink)) };
}

describe('PinoLogger: Nest logger calls as pino lines', () => {
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('a text with the logger context, fields with their text, an error with its stack', async () => {
    const { lines, logger } = capture();
    Logger.overrideLogger(logger);
    const nest = new Logger('Sessions');
    nest.log('started');
    nest.warn({ sessionId: 's1', count: 2 }, 'slow turn');
    nest.error('it broke', 'Error: it broke\n    at somewhere (file.ts:1:1)');
    nest.error(new Error('thrown'));
    nest.debug('details');
    await settle();
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, context: 'Sessions', msg: 'started' }),
      expect.objectContaining({ level: 40, context: 'Sessions', msg: 'slow turn', sessionId: 's1', count: 2 }),
      expect.objectContaining({
        level: 50,
        context: 'Sessions',
        msg: 'it broke',
        err: expect.objectContaining({ stack: expect.stringContaining('at somewhere') }),
      }),
      expect.objectContaining({ level: 50, context: 'Sessions', msg: 'thrown', err: expect.objectContaining({ message: 'thrown', type: 'Error' }) }),
      expect.objectContaining({ level: 20, context: 'Sessions', msg: 'details' }),
    ]);
    Logger.overrideLogger(false);
  });

  it('writes nothing below its level, and redacts fields named like secrets', async () => {
    const { lines, logger } = capture('info');
    logger.debug('hidden', 'Ctx');
    logger.log({ detail: { apiKey: 'sk-live-1', password: 'hunter2', name: 'kept' } }, 'with secrets', 'Ctx');
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'with secrets', context: 'Ctx', detail: { apiKey: '[redacted]', password: '[redacted]', name: 'kept' } });
    expect(JSON.stringify(lines)).not.toMatch(/sk-live-1|hunter2/);
  });
});
