import { micromark } from 'micromark';
import { useLayoutEffect, useRef } from 'react';

/**
 * Text blocks as Markdown, safely: micromark (CommonMark) escapes any raw HTML in the text and drops links whose
 * protocol is not http(s), mailto, irc(s) or xmpp (so `javascript:` gives an empty href). Its HTML is parsed into an
 * inert document (nothing loads or runs there), links get `rel="noopener noreferrer"` and open in a new tab, and
 * images become links: the console's Content-Security-Policy loads no outside image, and fetching one would tell its
 * host who reads the session.
 */
export function Markdown({ text }: { text: string }) {
  const container = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const target = container.current;
    if (!target) return;
    const inert = new DOMParser().parseFromString(micromark(text), 'text/html');
    for (const image of Array.from(inert.querySelectorAll('img'))) {
      const src = image.getAttribute('src') ?? '';
      const replacement = inert.createElement(src ? 'a' : 'span');
      replacement.textContent = `Image: ${image.getAttribute('alt') || src || 'no address'}`;
      if (src) replacement.setAttribute('href', src);
      image.replaceWith(replacement);
    }
    for (const link of Array.from(inert.querySelectorAll('a'))) {
      const href = link.getAttribute('href') ?? '';
      if (!/^(https?:|mailto:|#)/i.test(href)) link.removeAttribute('href');
      link.setAttribute('rel', 'noopener noreferrer');
      if (!href.startsWith('#')) link.setAttribute('target', '_blank');
    }
    target.replaceChildren(...Array.from(inert.body.childNodes));
  }, [text]);
  return <div className="markdown" ref={container} />;
}
