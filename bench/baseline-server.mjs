// The baseline: a primary-key read of a session with Fastify and pg alone (no NestJS, no auth), to compare the app with.
// The key is (organization_id, id), as the app reads it: the organization is in the path, where the app has it from the key.
import { createRequire } from 'node:module';
import process from 'node:process';
import pg from 'pg';

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

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await app.close();
    await pool.end();
    process.exit(0);
  });
}

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
