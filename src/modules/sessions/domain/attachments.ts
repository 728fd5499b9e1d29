import type { FieldError } from '../../../platform/http/validation';
import type { ContentBlock } from './message';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The first bytes each accepted media type must start with. */
const SIGNATURES: Record<string, (bytes: Buffer) => boolean> = {
  'image/jpeg': (b) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/gif': (b) => ['GIF87a', 'GIF89a'].includes(b.subarray(0, 6).toString('latin1')),
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  'application/pdf': (b) => b.subarray(0, 5).toString('latin1') === '%PDF-',
};

/**
 * Checks base64 payloads beyond their schema: strict, padded base64 that decodes to bytes whose
 * signature matches the declared media type. Only the first bytes are decoded.
 */
export function checkBase64Payload(field: string, data: string, mediaType: string): FieldError | null {
  if (!BASE64.test(data)) return { field: `${field}.data`, message: 'is not valid base64 (standard alphabet, padded)' };
  const head = Buffer.from(data.slice(0, 24), 'base64');
  const matches = SIGNATURES[mediaType];
  if (matches && !matches(head)) return { field: `${field}.data`, message: `does not contain ${mediaType} data (its bytes are of another type)` };
  return null;
}

/** Every base64 image and PDF inside the given blocks (tool results included), checked. */
export function checkContentPayloads(blocks: ContentBlock[], path: string): FieldError[] {
  const errors: FieldError[] = [];
  blocks.forEach((block, i) => {
    const at = `${path}[${i}]`;
    if ((block.type === 'image' || block.type === 'document') && block.source.type === 'base64') {
      const error = checkBase64Payload(`${at}.source`, block.source.data, block.source.mediaType);
      if (error) errors.push(error);
    }
    if (block.type === 'tool_result' && Array.isArray(block.content)) {
      errors.push(...checkContentPayloads(block.content as ContentBlock[], `${at}.content`));
    }
  });
  return errors;
}
