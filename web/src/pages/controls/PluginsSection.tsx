import { Link } from 'react-router';
import type { Schemas } from '../../api/client';
import { usePluginCatalog } from '../../api/controls';
import { ErrorMessage } from '../../components/ErrorMessage';
import { formatTime } from '../../format';
import type { JsonObject } from './settings-model';

type Marketplace = Schemas['MarketplaceCatalog'];
type Plugin = Schemas['CatalogPluginState'];

/**
 * The plugins of the organization's marketplaces as its agents last reported them (the server never fetches a
 * marketplace), each with a switch for its `plugin@marketplace` entry of `enabledPlugins` in the form's draft: a
 * switch changes the settings as any field does, and Save sends it. `enabled` is the draft's `enabledPlugins`,
 * `saved` the one in force: turning off a plugin the saved settings do not name leaves no entry behind.
 */
export function PluginsSection(props: { enabled: JsonObject; saved: JsonObject; onChange: (id: string, next: boolean | undefined) => void }) {
  // Read again after a save (a marketplace added, a plugin turned on).
  const catalog = usePluginCatalog();
  const toggle = (id: string, on: boolean) => props.onChange(id, on ? true : Object.hasOwn(props.saved, id) ? false : undefined);
  const isOn = (id: string) => props.enabled[id] === true;
  return (
    <section className="plugins-section" aria-labelledby="plugins-heading">
      <h2 id="plugins-heading">Plugins</h2>
      <p className="hint">
        The plugins of the marketplaces in <code>extraKnownMarketplaces</code>, as agents reported them when they fetched the marketplaces for a turn: the
        server does not fetch them and does not vouch for what they hold. A switch turns the plugin&apos;s entry of <code>enabledPlugins</code> on or off; save
        the controls to apply it.
      </p>
      {catalog.isPending ? (
        <p className="loading">Loading the plugin catalog…</p>
      ) : catalog.data ? (
        <>
          {catalog.data.marketplaces.length === 0 ? (
            <p className="muted">No marketplaces: add one to Extra known marketplaces below and save; agents report its plugins when they next run a turn.</p>
          ) : null}
          {catalog.data.marketplaces.map((marketplace) => (
            <MarketplacePlugins key={marketplace.name} marketplace={marketplace} isOn={isOn} toggle={toggle} />
          ))}
          {catalog.data.unlistedEnabledPlugins.length > 0 ? (
            <fieldset className="schema-group">
              <legend>Enabled, in no catalog</legend>
              <p className="hint">
                Entries of <code>enabledPlugins</code> that no reported catalog lists: their marketplace is not known, not reported yet or unreadable, or does
                not list them.
              </p>
              <ul className="plugin-list">
                {catalog.data.unlistedEnabledPlugins.map((id) => (
                  <li key={id} className="plugin">
                    <PluginSwitch id={`plugin-unlisted-${id}`} label={id} on={isOn(id)} onChange={(on) => toggle(id, on)} />
                  </li>
                ))}
              </ul>
            </fieldset>
          ) : null}
        </>
      ) : (
        <ErrorMessage error={catalog.error} action="Reading the plugin catalog" />
      )}
    </section>
  );
}

function MarketplacePlugins({
  marketplace,
  isOn,
  toggle,
}: {
  marketplace: Marketplace;
  isOn: (id: string) => boolean;
  toggle: (id: string, on: boolean) => void;
}) {
  const { catalog } = marketplace;
  return (
    <fieldset className="schema-group plugin-marketplace">
      <legend>{marketplace.name}</legend>
      <p className="muted">
        <code>
          {marketplace.source} {marketplace.repo}
          {marketplace.ref ? ` @ ${marketplace.ref}` : ''}
        </code>
      </p>
      {marketplace.allowed ? null : (
        <p className="alert alert-warning">
          <code>strictKnownMarketplaces</code> does not name this marketplace: agents load none of its plugins.
        </p>
      )}
      {catalog === null ? (
        <p className="muted">No catalog yet: reported when an agent next runs a turn.</p>
      ) : (
        <>
          <p className="muted">
            {catalog.commit ? (
              <>
                At commit <code>{catalog.commit.slice(0, 12)}</code>, reported
              </>
            ) : (
              'Reported'
            )}{' '}
            by <Link to={`/computers/${catalog.computerId}`}>a computer&apos;s agent</Link> on {formatTime(Date.parse(catalog.reportedAt))}.
          </p>
          {catalog.error !== null ? (
            <p className="alert alert-error">An agent could not read this marketplace: {catalog.error}</p>
          ) : catalog.plugins.length === 0 ? (
            <p className="muted">The marketplace lists no plugins.</p>
          ) : (
            <ul className="plugin-list">
              {catalog.plugins.map((plugin) => (
                <PluginRow key={plugin.name} plugin={plugin} id={`${plugin.name}@${marketplace.name}`} isOn={isOn} toggle={toggle} />
              ))}
            </ul>
          )}
        </>
      )}
    </fieldset>
  );
}

function PluginRow({ plugin, id, isOn, toggle }: { plugin: Plugin; id: string; isOn: (id: string) => boolean; toggle: (id: string, on: boolean) => void }) {
  const elementId = `plugin-${id.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;
  const details = [plugin.category, plugin.author ? `by ${plugin.author}` : undefined].filter(Boolean).join(', ');
  return (
    <li className="plugin">
      <div className="plugin-head">
        <PluginSwitch id={elementId} label={plugin.name} on={isOn(id)} onChange={(on) => toggle(id, on)} describedBy={`${elementId}-about`} />
        {plugin.version ? <span className="badge">{plugin.version}</span> : null}
      </div>
      <p className="hint" id={`${elementId}-about`}>
        {plugin.description ?? 'No description.'}
        {details ? ` (${details})` : ''}
      </p>
    </li>
  );
}

/** A switch: a checkbox announced as one, named by the plugin. */
function PluginSwitch(props: { id: string; label: string; on: boolean; onChange: (on: boolean) => void; describedBy?: string }) {
  return (
    <label htmlFor={props.id} className="checkbox-label plugin-switch">
      <input
        id={props.id}
        type="checkbox"
        role="switch"
        checked={props.on}
        aria-checked={props.on}
        aria-describedby={props.describedBy}
        onChange={(event) => props.onChange(event.target.checked)}
      />
      <span>{props.label}</span>
    </label>
  );
}
