import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig, ConfigError } from '../../config/app-config';

const PREFIX = 'enc:v1:';
/** The file in DATA_DIR that holds the generated key when SECRETS_KEY is not set. */
export const KEY_FILE = 'secrets.key';

interface Key {
  id: string;
  material: Buffer;
}

/**
 * Encrypts secrets kept in the database (custom models' API keys) with AES-256-GCM, so a dump or
 * a backup of the database alone does not reveal them. Keys come from SECRETS_KEY: one or more
 * 32-byte keys, base64 or hex, comma-separated; the first encrypts, all decrypt (rotation: put
 * the new key first). Each envelope names its key and is bound to a context (the organization), so
 * a ciphertext copied to another organization's row does not decrypt.
 *
 * On the embedded database with no SECRETS_KEY, a key is made once in DATA_DIR/secrets.key, so
 * `npm start` works on a bare machine. With DATABASE_URL, SECRETS_KEY is required: instances share
 * the database and must share the key, and the key must not live beside the data it protects.
 */
@Injectable()
export class SecretBox {
  private readonly keys: Key[];

  constructor(config: AppConfig) {
    this.keys = SecretBox.loadKeys(config);
  }

  static loadKeys(config: AppConfig): Key[] {
    if (config.SECRETS_KEY) return config.SECRETS_KEY.split(',').map((text) => toKey(text.trim()));
    if (config.engine === 'postgres') {
      throw new ConfigError(
        "SECRETS_KEY is required with DATABASE_URL: it encrypts custom models' API keys, and every instance needs the same one. " +
          'Make one with `openssl rand -base64 32`.',
      );
    }
    return [toKey(readOrCreateKeyFile(config.dataDir))];
  }

  encrypt(plain: string, context: string): string {
    const key = this.keys[0];
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key.material, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${key.id}:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`;
  }

  decrypt(envelope: string, context: string): string {
    const match = /^enc:v1:([0-9a-f]{16}):([A-Za-z0-9_-]+)$/.exec(envelope);
    if (!match) throw new Error('SecretBox: not an encrypted value');
    const key = this.keys.find((candidate) => candidate.id === match[1]);
    if (!key) throw new Error(`SecretBox: encrypted with key ${match[1]}, which SECRETS_KEY no longer holds`);
    const raw = Buffer.from(match[2], 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key.material, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  /** The key written in a key file (secrets.key), as SECRETS_KEY would hold it. */
  static keyFileText(path: string): string {
    return readFileSync(path, 'utf8').trim();
  }

  static isEncrypted(value: unknown): value is string {
    return typeof value === 'string' && value.startsWith(PREFIX);
  }
}

function toKey(text: string): Key {
  const material = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (material.length !== 32) {
    throw new ConfigError('SECRETS_KEY: each key must be 32 bytes, written as base64 (44 characters) or hex (64); make one with `openssl rand -base64 32`');
  }
  return { id: createHash('sha256').update(material).digest('hex').slice(0, 16), material };
}

function readOrCreateKeyFile(dataDir: string): string {
  const path = join(dataDir, KEY_FILE);
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    // `wx`: if another process made it first, ours fails and we read theirs.
    try {
      writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    chmodSync(path, 0o600);
  }
  return readFileSync(path, 'utf8').trim();
}
