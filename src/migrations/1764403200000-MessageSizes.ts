import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each message's size (the bytes of its content and attributes as JSON text), kept by a trigger
 * on every insert and change, so that pages of messages are cut to MESSAGE_PAGE_MAX_BYTES by
 * summing a column instead of printing every message's JSON on every read.
 */
export class MessageSizes1764403200000 implements MigrationInterface {
  name = 'MessageSizes1764403200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "messages" ADD "size_bytes" integer NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE FUNCTION "messages_size"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.size_bytes := octet_length(NEW.content::text) + octet_length(NEW.attributes::text);
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER "messages_size" BEFORE INSERT OR UPDATE OF "content", "attributes" ON "messages"
      FOR EACH ROW EXECUTE FUNCTION "messages_size"()`);
    await q.query(`UPDATE "messages" SET "size_bytes" = octet_length("content"::text) + octet_length("attributes"::text)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "messages_size" ON "messages"`);
    await q.query(`DROP FUNCTION "messages_size"()`);
    await q.query(`ALTER TABLE "messages" DROP COLUMN "size_bytes"`);
  }
}
