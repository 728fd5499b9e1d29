import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A page: its title in the tab and as the one h1, which takes the focus when the page opens so that a screen reader
 * announces it and keyboard users start from the top of the new content.
 */
export function Page({ title, intro, children }: { title: string; intro?: ReactNode; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Agent Platform`;
    heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <div className="page">
      <h1 ref={heading} tabIndex={-1}>
        {title}
      </h1>
      {intro ? <div className="intro">{intro}</div> : null}
      {children}
    </div>
  );
}
