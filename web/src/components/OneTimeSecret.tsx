import { useId, useState } from 'react';

/**
 * A secret the server shows once (a new API key): selectable, with a copy button and a warning that it will not be
 * shown again. `onDone` lets the page move on once the user has it.
 */
export function OneTimeSecret({
  label,
  secret,
  doneLabel,
  onDone,
  valueLabel = 'The key',
  note = 'The server keeps only a hash of it; if you lose it, revoke it and create another.',
}: {
  label: string;
  secret: string;
  doneLabel: string;
  onDone: () => void;
  /** The field's label (default "The key"). */
  valueLabel?: string;
  /** After the warning: how the server keeps it and what to do when it is lost (default: an API key's). */
  note?: string;
}) {
  const id = useId();
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <section className="one-time-secret" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{label}</h2>
      <p className="alert alert-warning">
        <strong>Copy it now: it is shown only this once.</strong> {note}
      </p>
      <label htmlFor={`${id}-value`}>{valueLabel}</label>
      <div className="secret-row">
        <input id={`${id}-value`} className="secret" readOnly value={secret} onFocus={(event) => event.currentTarget.select()} spellCheck={false} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p className="copy-status" role="status" aria-live="polite">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'failed' ? 'The browser refused to copy: select the key and copy it yourself.' : ''}
      </p>
      <button type="button" className="primary" onClick={onDone}>
        {doneLabel}
      </button>
    </section>
  );
}
