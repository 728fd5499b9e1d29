import { checkBase64Payload, checkContentPayloads } from './attachments';

const b64 = (bytes: number[] | string) => Buffer.from(typeof bytes === 'string' ? bytes : Uint8Array.from(bytes)).toString('base64');

const PNG = b64([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const JPEG = b64([0xff, 0xd8, 0xff, 0xe0, 0, 16]);
const GIF = b64('GIF89a\x01\x00');
const WEBP = b64('RIFF\x10\x00\x00\x00WEBPVP8 ');
const PDF = b64('%PDF-1.7\n%\xe2\xe3');

describe('base64 attachments', () => {
  it.each([
    ['image/png', PNG],
    ['image/jpeg', JPEG],
    ['image/gif', GIF],
    ['image/webp', WEBP],
    ['application/pdf', PDF],
  ])('accepts %s bytes declared as such', (mediaType, data) => {
    expect(checkBase64Payload('x', data, mediaType)).toBeNull();
  });

  it.each([
    ['image/jpeg', PNG],
    ['image/png', JPEG],
    ['image/webp', GIF],
    ['image/gif', WEBP],
    ['application/pdf', PNG],
  ])('refuses bytes that are not %s', (mediaType, data) => {
    expect(checkBase64Payload('images[0]', data, mediaType)).toEqual({
      field: 'images[0].data',
      message: expect.stringContaining(mediaType),
    });
  });

  it.each(['not base64!', 'iVBORw0KGgo', 'iVBO\nRw0KGgo=', 'iVBORw0KGgo==='])('refuses malformed base64 %p', (data) => {
    expect(checkBase64Payload('files[1]', data, 'image/png')).toEqual({ field: 'files[1].data', message: expect.stringContaining('base64') });
  });

  it('finds bad payloads inside tool results too, with their path', () => {
    const errors = checkContentPayloads(
      [
        { type: 'text', text: 'hi' },
        { type: 'tool_result', toolUseId: 't', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: JPEG } }] },
        { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'plain text is not base64' } },
      ],
      'messages[0].content',
    );
    expect(errors).toEqual([{ field: 'messages[0].content[1].content[0].source.data', message: expect.stringContaining('image/png') }]);
  });
});
