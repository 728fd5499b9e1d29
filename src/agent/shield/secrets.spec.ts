import { findSecrets, redactSecrets } from './secrets';

// Built at run time, so that no scanner of this repository's history flags these test values.
const github = ['ghp', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('_');
const slack = ['xoxb', '123456789012', '1234567890123', 'AbCdEfGhIjKlMnOpQrStUvWx'].join('-');

describe('Agent Shield: secrets in text', () => {
  it('finds credentials by the maintained rule set, and nothing in ordinary text', async () => {
    expect((await findSecrets(`token: ${github}\nslack ${slack}\n`)).map((finding) => finding.kind)).toEqual(['GITHUB_TOKEN', 'SLACK_TOKEN']);
    expect(await findSecrets('const total = items.reduce((sum, item) => sum + item.price, 0); // sk- is a prefix\n')).toEqual([]);
  });

  it('redacts each credential in place, keeping the text around it', async () => {
    const { text, kinds } = await redactSecrets(`before ${github} middle ${slack} after`);
    expect(text).toBe('before [REDACTED GITHUB_TOKEN] middle [REDACTED SLACK_TOKEN] after');
    expect(kinds).toEqual(['GITHUB_TOKEN', 'SLACK_TOKEN']);
    expect(await redactSecrets('nothing here')).toEqual({ text: 'nothing here', kinds: [] });
  });
});
