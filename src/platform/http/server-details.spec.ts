import { ServerDetails } from './server-details';

describe('ServerDetails', () => {
  const details = new ServerDetails({ computersDir: '/srv/data/computers', dataDir: '/srv/data' }, 'build-7.internal');

  it.each([
    [
      "fatal: could not create work tree dir '/srv/data/computers/c1/.partial-repo': Permission denied",
      "fatal: could not create work tree dir '$COMPUTERS_DIR/c1/.partial-repo': Permission denied",
    ],
    ['EACCES: open /srv/data/secrets.key', 'EACCES: open $DATA_DIR/secrets.key'],
    ['at /srv/data', 'at $DATA_DIR'],
    ['PGlite ready at /srv/data.', 'PGlite ready at $DATA_DIR.'],
    ['on build-7.internal.', 'on <server-host>.'],
    ['file:///srv/data/computers/c1/repo', 'file://$COMPUTERS_DIR/c1/repo'],
    ['connect to build-7.internal:5432 failed', 'connect to <server-host>:5432 failed'],
    ['BUILD-7.internal said no', '<server-host> said no'],
  ])('%s', (text, redacted) => {
    expect(details.redact(text)).toBe(redacted);
  });

  it.each([
    'https://git.example/srv/data/computers.git',
    '/srv/database/x',
    '~/srv/data',
    'my-build-7.internal.example and xbuild-7.internal and build-7.internal.example',
    '/srv/data.bak',
    '/opt/srv/data/x',
  ])('leaves %s alone', (text) => {
    expect(details.redact(text)).toBe(text);
  });

  it('redacts every string of error metadata, leaving other values', () => {
    expect(details.redactDeep({ errors: [{ field: 'x', message: 'in /srv/data/computers/c' }], limit: 3, ok: true })).toEqual({
      errors: [{ field: 'x', message: 'in $COMPUTERS_DIR/c' }],
      limit: 3,
      ok: true,
    });
  });
});
