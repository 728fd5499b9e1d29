import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../config/app-config';
import { SecretBox } from './secret-box';

const key = () => randomBytes(32).toString('base64');

describe('SecretBox', () => {
  it('round-trips a secret, and the envelope does not contain it', () => {
    const box = new SecretBox(loadConfig({ SECRETS_KEY: key() }));
    const envelope = box.encrypt('sk-live-0123456789', 'org-1');
    expect(envelope).toMatch(/^enc:v1:[0-9a-f]{16}:/);
    expect(envelope).not.toContain('0123456789');
    expect(box.decrypt(envelope, 'org-1')).toBe('sk-live-0123456789');
  });

  it('refuses an envelope moved to another context, or altered', () => {
    const box = new SecretBox(loadConfig({ SECRETS_KEY: key() }));
    const envelope = box.encrypt('secret', 'org-1');
    expect(() => box.decrypt(envelope, 'org-2')).toThrow();
    const altered = envelope.slice(0, -2) + (envelope.endsWith('AA') ? 'AB' : 'AA');
    expect(() => box.decrypt(altered, 'org-1')).toThrow();
  });

  it('decrypts with an older key after rotation and encrypts with the first', () => {
    const [older, newer] = [key(), key()];
    const before = new SecretBox(loadConfig({ SECRETS_KEY: older })).encrypt('secret', 'org');
    const rotated = new SecretBox(loadConfig({ SECRETS_KEY: `${newer},${older}` }));
    expect(rotated.decrypt(before, 'org')).toBe('secret');
    expect(rotated.encrypt('secret', 'org').split(':')[2]).not.toBe(before.split(':')[2]);
    expect(() => new SecretBox(loadConfig({ SECRETS_KEY: newer })).decrypt(before, 'org')).toThrow(/no longer holds/);
  });

  it('accepts hex keys and refuses keys of the wrong size', () => {
    expect(() => new SecretBox(loadConfig({ SECRETS_KEY: randomBytes(32).toString('hex') }))).not.toThrow();
    expect(() => new SecretBox(loadConfig({ SECRETS_KEY: randomBytes(16).toString('base64') }))).toThrow(/32 bytes/);
  });

  it('makes a key file readable only by its owner on the embedded database, and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-box-'));
    const first = new SecretBox(loadConfig({ DATA_DIR: dir })).encrypt('secret', 'org');
    expect(statSync(join(dir, 'secrets.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'secrets.key'), 'utf8')).not.toContain('secret');
    expect(new SecretBox(loadConfig({ DATA_DIR: dir })).decrypt(first, 'org')).toBe('secret');
  });

  it('requires SECRETS_KEY with DATABASE_URL', () => {
    expect(() => new SecretBox(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }))).toThrow(/SECRETS_KEY is required/);
  });
});
