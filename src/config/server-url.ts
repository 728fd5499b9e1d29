/**
 * The URLs the configuration names (BASE_URL, APP_URL, JWT_JWKS_URL): http, https or ftp, with a host. These are
 * the rules class-validator's `@IsUrl({ require_tld: false, require_protocol: true })` applied (validator 13.15),
 * kept to the letter, quirks included (`http:host` passes), so no value a deployment starts with today is refused.
 */
export function isServerUrl(value: string): boolean {
  if (value === '' || value.length > MAX_LENGTH || /[\s<>]/.test(value)) return false;
  const url = value.split('#')[0].split('?')[0];
  const scheme = /^([a-z][a-z0-9+\-.]*):/i.exec(url);
  if (!scheme || !SCHEMES.includes(scheme[1].toLowerCase())) return false;
  let rest = url.slice(scheme[0].length);
  if (rest.startsWith('//')) {
    rest = rest.slice(2);
  } else {
    // Without `//`, what follows the colon is the host, unless it reads as credentials or a port (no scheme, then).
    const beforeSlash = rest.split('/')[0];
    const at = beforeSlash.indexOf('@');
    const user = beforeSlash.slice(0, at);
    if (at === -1 ? /^[0-9]/.test(rest) : /^[a-zA-Z0-9\-_.%:]*$/.test(user) && !/%[0-9a-fA-F]{2}/.test(user)) return false;
  }
  if (rest === '') return false;
  const parts = rest.split('/')[0].split('@');
  if (parts.length > 1) {
    const credentials = parts.shift()!;
    const [user, password] = credentials.split(':');
    if (credentials === '' || credentials.split(':').length > 2 || (user === '' && password === '')) return false;
  }
  const hostAndPort = parts.join('@');
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(hostAndPort);
  const [host, ...port] = bracketed ? ['', ...(bracketed[2] === undefined ? [] : [bracketed[2]])] : hostAndPort.split(':');
  const portText = port.join(':');
  if (portText !== '' && (!/^[0-9]+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535)) return false;
  return bracketed ? IPV6.test(bracketed[1]) : IPV4.test(host) || isHostName(host);
}

const SCHEMES = ['http', 'https', 'ftp'];
const MAX_LENGTH = 2084;

/** Dot-separated labels of letters (any script), digits and inner hyphens, up to 63 characters each; the last not all digits. */
function isHostName(host: string): boolean {
  const labels = host.split('.');
  if (/^\d+$/.test(labels[labels.length - 1])) return false;
  // Full-width forms (U+FF01 to U+FF5E) look like ASCII and are refused.
  return labels.every((label) => label.length <= 63 && /^[a-z\u00a1-\uffff0-9-]+$/i.test(label) && !/[\uff01-\uff5e]/.test(label) && !/^-|-$/.test(label));
}

const V4_PART = '(?:[0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])';
const V4 = `(?:${V4_PART}[.]){3}${V4_PART}`;
const IPV4 = new RegExp(`^${V4}$`);
const H = '(?:[0-9a-fA-F]{1,4})';
/** Every way of writing an IPv6 address (`::` anywhere, an IPv4 tail), with an optional zone (`%eth0`). */
const IPV6 = new RegExp(
  '^(' +
    [
      `(?:${H}:){7}(?:${H}|:)`,
      `(?:${H}:){6}(?:${V4}|:${H}|:)`,
      `(?:${H}:){5}(?::${V4}|(:${H}){1,2}|:)`,
      `(?:${H}:){4}(?:(:${H}){0,1}:${V4}|(:${H}){1,3}|:)`,
      `(?:${H}:){3}(?:(:${H}){0,2}:${V4}|(:${H}){1,4}|:)`,
      `(?:${H}:){2}(?:(:${H}){0,3}:${V4}|(:${H}){1,5}|:)`,
      `(?:${H}:){1}(?:(:${H}){0,4}:${V4}|(:${H}){1,6}|:)`,
      `(?::((?::${H}){0,5}:${V4}|(?::${H}){1,7}|:))`,
    ].join('|') +
    ')(%[0-9a-zA-Z.]{1,})?$',
);
