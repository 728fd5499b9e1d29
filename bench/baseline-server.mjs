// The baselines: bare Fastify and pg (no NestJS, no auth), to compare the app with.
// - The primary-key read of a session. The key is (organization_id, id), as the app reads it: the organization is in
//   the path, where the app has it from the key.
// - The same work as each scenario (BENCH_SAME_WORK, a file of plans made by lib/capture.mjs): the statements the app
//   ran for one request of it, in the same order, with the same values taken from the same request, under
//   /same-work/<plan>/<the app's path>.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

// Fastify is not a dependency of ours but of @nestjs/platform-fastify: take the very copy the app runs on.
const fastify = createRequire(import.meta.resolve('@nestjs/platform-fastify'))('fastify');

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = fastify({ logger: false });

app.get('/healthz', async () => {
  await pool.query('SELECT 1');
  return { status: 'ok' };
});

app.get('/organizations/:organizationId/sessions/:id', async (request, reply) => {
  const { rows } = await pool.query('SELECT * FROM sessions WHERE organization_id = $1 AND id = $2', [request.params.organizationId, request.params.id]);
  if (rows.length === 0) return reply.code(404).send({ status: 404 });
  return rows[0];
});

const plans = process.env.BENCH_SAME_WORK ? JSON.parse(readFileSync(process.env.BENCH_SAME_WORK, 'utf8')) : [];
plans.forEach((plan, index) => {
  if (!plan) return;
  const statements = plan.statements.map((s, i) => ({ ...s, name: s.named ? `same-work-${index}-${i}` : undefined }));
  const query = (db, s, values) => (s.simple ? db.query(s.text) : db.query({ name: s.name, text: s.text, values }));
  app.route({
    method: plan.method,
    url: `/same-work/${index}/*`,
    handler: async (request, reply) => {
      // The request's values where the app found them: path segments, query parameters, fields of the body.
      const path = `/${request.params['*']}`.split('/');
      const made = [];
      const value = (parts) => {
        if (parts === null) return null;
        let text = '';
        for (const part of parts) {
          if (typeof part === 'string') text += part;
          else if (part.ref) text += lookup(part.ref, path, request);
          else if (part.uuid !== undefined) text += made[part.uuid] ??= part.version === '7' ? uuidv7() : randomUUID();
          else if (part.random !== undefined) text += made[part.random] ??= part.prefix + randomToken(part.length, part.hex);
          else if (part.now !== undefined) text += new Date(Date.now() + part.now).toISOString();
        }
        return text;
      };
      let rows = [];
      if (plan.transaction === 'none') {
        for (const s of statements) rows = (await query(pool, s, s.params.map(value))).rows;
      } else {
        // One connection: the app's own BEGIN ... COMMIT replayed, or ours around statements it ran without one.
        const client = await pool.connect();
        try {
          if (plan.transaction === 'wrapped') await client.query('BEGIN');
          for (const s of statements) {
            const result = await query(client, s, s.params.map(value));
            if (!s.simple) rows = result.rows;
          }
          if (plan.transaction === 'wrapped') await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      }
      return reply.code(plan.expectStatus).send(rows.length === 1 ? rows[0] : rows);
    },
  });
});

function lookup(ref, path, request) {
  const [where, ...rest] = ref.split('.');
  const name = rest.join('.');
  if (where === 'path') return decodeURIComponent(path[Number(name)]);
  if (where === 'query') return request.query[name];
  let value = request.body;
  for (const key of name.split('.')) value = value?.[key];
  return String(value);
}

/** Letters and digits (or hex digits), as many as the app's made-up token had. */
function randomToken(length, hex) {
  const bytes = randomBytes(length);
  return hex ? bytes.toString('hex').slice(0, length) : bytes.toString('base64url').replace(/[-_]/g, '0').slice(0, length);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await app.close();
    await pool.end();
    process.exit(0);
  });
}

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
