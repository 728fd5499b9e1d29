/** The header of a table's last column, each row's buttons: hidden, as every button names its row. */
export function ActionsHeader() {
  return (
    <th scope="col">
      <span className="visually-hidden">Actions</span>
    </th>
  );
}

/**
 * A row's one destructive action ("Evict", "Revoke"), in that last column while `available`; its accessible name
 * adds the row's name ("Evict gpu-01"), since a screen reader reads the button out of its row.
 */
export function DangerRowAction({ action, name, available, onClick }: { action: string; name: string; available: boolean; onClick: () => void }) {
  return (
    <td data-label="">
      {available ? (
        <button type="button" className="danger small" onClick={onClick} aria-label={`${action} ${name}`}>
          {action}
        </button>
      ) : null}
    </td>
  );
}
