import * as Dialog from '@radix-ui/react-dialog';
import { useLayoutEffect, useRef, type ReactNode } from 'react';

/**
 * Asks before something that cannot be undone (Radix's dialog: focus moves in and stays, Escape cancels, focus returns
 * to the button that opened it).
 */
export function ConfirmDialog(props: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  pending?: boolean;
  onConfirm: () => void;
  error?: ReactNode;
}) {
  // Opened from a button of the page (no Radix trigger): the focus goes back to it when the dialog closes.
  const opener = useRef<HTMLElement | null>(null);
  useLayoutEffect(() => {
    if (props.open) opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  }, [props.open]);
  return (
    <Dialog.Root open={props.open} onOpenChange={props.onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className="dialog"
          onCloseAutoFocus={(event) => {
            if (opener.current?.isConnected) {
              event.preventDefault();
              opener.current.focus();
            }
          }}
        >
          <Dialog.Title>{props.title}</Dialog.Title>
          <Dialog.Description asChild>
            <div className="dialog-body">{props.children}</div>
          </Dialog.Description>
          {props.error}
          <div className="dialog-actions">
            <Dialog.Close asChild>
              <button type="button">Cancel</button>
            </Dialog.Close>
            <button type="button" className="danger" disabled={props.pending} onClick={props.onConfirm}>
              {props.pending ? 'Working…' : props.confirmLabel}
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
