import { useId, useMemo, useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { useActiveUsers, useAnalyticsUsers, useProductivity, useTokenUsage, useToolUsage, type DayRange as Range } from '../../api/analytics';
import { EmptyState } from '../../components/EmptyState';
import { ErrorMessage } from '../../components/ErrorMessage';
import { Page } from '../../components/Page';
import { Chart, compact, type Series } from './Chart';
import { downloadCsv, toCsv } from './csv';
import { addDays, HISTORY_START, MAX_RANGE_DAYS, rangeProblem, yesterdayUtc } from './date-range';
import './analytics.css';

const PRESETS = [7, 30, 90];
const TOP = 7;

/** `{app_url}/analytics`: the organization's usage over a range of closed days (owners and managers, as the API allows). */
export default function Analytics() {
  const [params, setParams] = useSearchParams();
  const fallback = { start: addDays(yesterdayUtc(), -29), end: yesterdayUtc() };
  const asked = { start: params.get('from') ?? fallback.start, end: params.get('to') ?? fallback.end };
  // A range from the address that the API would refuse is not sent: the picker shows why.
  const applied = rangeProblem(asked.start, asked.end) ? null : asked;
  return (
    <Page
      title="Analytics"
      intro={
        <p>
          What the organization&apos;s people and agents did, per UTC day, from the platform&apos;s own activity (definitions in <code>docs/analytics.md</code>
          ).
        </p>
      }
    >
      <RangePicker key={`${asked.start}:${asked.end}`} initial={asked} onApply={(range) => setParams({ from: range.start, to: range.end })} />
      {applied ? <Report range={applied} /> : null}
    </Page>
  );
}

function RangePicker({ initial, onApply }: { initial: { start: string; end: string }; onApply: (range: { start: string; end: string }) => void }) {
  const id = useId();
  const [start, setStart] = useState(initial.start);
  const [end, setEnd] = useState(initial.end);
  const problem = rangeProblem(start, end);
  const yesterday = yesterdayUtc();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!problem) onApply({ start, end });
  };
  return (
    <form className="form form-inline range-picker" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Days (UTC)</h2>
      <div className="field">
        <label htmlFor={`${id}-start`}>From</label>
        <input
          id={`${id}-start`}
          type="date"
          value={start}
          max={yesterday}
          onChange={(event) => setStart(event.target.value)}
          aria-invalid={problem?.field === 'start' || undefined}
          aria-describedby={`${id}-rules${problem ? ` ${id}-problem` : ''}`}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-end`}>To</label>
        <input
          id={`${id}-end`}
          type="date"
          value={end}
          max={yesterday}
          onChange={(event) => setEnd(event.target.value)}
          aria-invalid={problem?.field === 'end' || undefined}
          aria-describedby={`${id}-rules${problem ? ` ${id}-problem` : ''}`}
        />
      </div>
      <button type="submit" className="primary" disabled={problem !== null}>
        Show
      </button>
      <div className="presets" role="group" aria-label="Quick ranges">
        {PRESETS.map((days) => (
          <button key={days} type="button" className="small" onClick={() => onApply({ start: addDays(yesterday, 1 - days), end: yesterday })}>
            Last {days} days
          </button>
        ))}
      </div>
      <p className="hint" id={`${id}-rules`}>
        Closed UTC days only: through yesterday ({yesterday}), at most {MAX_RANGE_DAYS} days at a time. Data starts on {HISTORY_START}.
      </p>
      {problem ? (
        <p className="field-problem" id={`${id}-problem`} role="alert">
          {problem.message}
        </p>
      ) : null}
    </form>
  );
}

function Report({ range }: { range: Range }) {
  const tokens = useTokenUsage(range);
  const activity = useActiveUsers(range);
  const tools = useToolUsage(range);
  const productivity = useProductivity(range);
  const suffix = `${range.start}_${range.end}`;

  const tokenChart = useMemo(() => {
    const rows = (tokens.data?.data ?? []).filter((row) => 'by_model' in row);
    const totals = new Map<string, number>();
    for (const row of rows) for (const model of row.by_model) totals.set(model.model_id, (totals.get(model.model_id) ?? 0) + model.billable_tokens);
    const models = [...totals].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([model]) => model);
    const shown = models.slice(0, TOP);
    const series: Series[] = shown.map((model) => ({
      label: model,
      values: rows.map((row) => row.by_model.find((m) => m.model_id === model)?.billable_tokens ?? 0),
    }));
    if (models.length > TOP)
      series.push({
        label: 'Other models',
        values: rows.map((row) => row.by_model.filter((m) => !shown.includes(m.model_id)).reduce((sum, m) => sum + m.billable_tokens, 0)),
      });
    const total = rows.reduce((sum, row) => sum + row.billable_tokens, 0);
    return {
      x: rows.map((row) => row.date),
      series,
      summary: `${compact(total)} billable tokens over ${rows.length} days${models.length ? `, most by ${models[0]}` : ''}.`,
    };
  }, [tokens.data]);

  const activityChart = useMemo(() => {
    const rows = (activity.data?.data ?? []).filter((row) => 'weekly_active_users' in row);
    const last = rows[rows.length - 1];
    return {
      x: rows.map((row) => row.date),
      series: [
        { label: 'Daily active users', values: rows.map((row) => row.daily_active_users) },
        { label: 'Weekly active users', values: rows.map((row) => row.weekly_active_users) },
        { label: 'Monthly active users', values: rows.map((row) => row.monthly_active_users) },
      ],
      summary: last
        ? `On ${last.date}: ${last.daily_active_users} daily, ${last.weekly_active_users} weekly and ${last.monthly_active_users} monthly active users.`
        : '',
    };
  }, [activity.data]);

  const toolChart = useMemo(
    () =>
      ranked(
        (tools.data?.data ?? []).flatMap((row) => ('by_tool' in row ? row.by_tool.map((t) => [t.tool, t.invocations] as const) : [])),
        'Tool calls',
      ),
    [tools.data],
  );
  const languageChart = useMemo(
    () =>
      ranked(
        (productivity.data?.data ?? []).flatMap((row) => row.by_language.map((l) => [l.language, l.count] as const)),
        'Files created or edited',
      ),
    [productivity.data],
  );

  return (
    <div className="report">
      <Section query={tokens} what="token usage">
        <Chart
          title="Tokens by model"
          summary={tokenChart.summary}
          x={tokenChart.x}
          xLabel="Date"
          series={tokenChart.series}
          kind="stacked"
          csvName={`tokens-by-model_${suffix}.csv`}
        />
      </Section>
      <Section query={activity} what="active users">
        <Chart
          title="Active users"
          summary={activityChart.summary}
          x={activityChart.x}
          xLabel="Date"
          series={activityChart.series}
          kind="lines"
          csvName={`active-users_${suffix}.csv`}
        />
      </Section>
      <Section query={tools} what="tool usage">
        <Chart
          title="Tool usage"
          summary={toolChart.summary}
          x={toolChart.x}
          xLabel="Tool"
          series={toolChart.series}
          kind="bars"
          csvName={`tool-usage_${suffix}.csv`}
        />
      </Section>
      <Section query={productivity} what="productivity">
        <Chart
          title="Productivity by language"
          summary={languageChart.summary}
          x={languageChart.x}
          xLabel="Language"
          series={languageChart.series}
          kind="bars"
          csvName={`productivity-by-language_${suffix}.csv`}
        />
      </Section>
      <UsersTable range={range} />
    </div>
  );
}

/** Totals by name over the range, largest first (ties by name): the top ones and the rest as "Other". */
function ranked(pairs: (readonly [string, number])[], measure: string) {
  const totals = new Map<string, number>();
  for (const [name, count] of pairs) totals.set(name, (totals.get(name) ?? 0) + count);
  const sorted = [...totals].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const top = sorted.slice(0, 12);
  const rest = sorted.slice(12).reduce((sum, [, count]) => sum + count, 0);
  if (rest > 0) top.push(['Other', rest]);
  const total = sorted.reduce((sum, [, count]) => sum + count, 0);
  return {
    x: top.map(([name]) => name),
    series: top.length ? [{ label: measure, values: top.map(([, count]) => count) }] : [],
    summary: top.length ? `${compact(total)} in all; most: ${top[0][0]} (${compact(top[0][1])}).` : '',
  };
}

function Section({ query, what, children }: { query: { isPending: boolean; error: unknown; data?: unknown }; what: string; children: React.ReactNode }) {
  if (query.isPending) return <p className="loading">Loading {what}…</p>;
  if (!query.data) return <ErrorMessage error={query.error} action={`Reading ${what}`} />;
  return <>{children}</>;
}

const USER_COLUMNS = [
  ['user_email', 'User'],
  ['date', 'Date'],
  ['billable_tokens', 'Billable tokens'],
  ['tool_calls', 'Tool calls'],
  ['sessions', 'Sessions'],
  ['messages', 'Messages'],
  ['files_created', 'Files created'],
  ['files_edited', 'Files edited'],
  ['git_commits', 'Commits'],
  ['primary_model', 'Primary model'],
  ['delegation_level', 'Delegation'],
  ['languages', 'Languages'],
] as const;
const USERS_PER_PAGE = 20;

function UsersTable({ range }: { range: Range }) {
  // The cursors of the pages before this one (the API pages forward only).
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const users = useAnalyticsUsers(range, cursor, USERS_PER_PAGE);
  const page = cursors.length + 1;
  const cells = (row: NonNullable<typeof users.data>['data'][number]) =>
    USER_COLUMNS.map(([field]) =>
      field === 'user_email' ? (row.user_email ?? `(removed user ${row.user_id.slice(0, 8)})`) : field === 'languages' ? row.languages.join(' ') : row[field],
    );
  return (
    <section className="chart-card" aria-labelledby="users-title">
      <h2 id="users-title">Users</h2>
      {users.isPending ? (
        <p className="loading">Loading users…</p>
      ) : !users.data ? (
        <ErrorMessage error={users.error} action="Reading users" />
      ) : users.data.data.length === 0 ? (
        <EmptyState title="Nobody was active in this range.">
          <p>Choose a longer range, or one that ends later. Days are counted once they close (UTC).</p>
        </EmptyState>
      ) : (
        <>
          <p className="chart-summary">
            Page {page}: {new Set(users.data.data.map((row) => row.user_id)).size} users, one row per user and active day ({USERS_PER_PAGE} users a page).
          </p>
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Users, one row per user and day">
            <table className="data-table users-table">
              <caption className="visually-hidden">Users, page {page}</caption>
              <thead>
                <tr>
                  {USER_COLUMNS.map(([field, label]) => (
                    <th scope="col" key={field}>
                      {label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {users.data.data.map((row) => (
                  <tr key={`${row.user_id}:${row.date}`}>
                    {cells(row).map((value, i) =>
                      i === 0 ? (
                        <th scope="row" key={i}>
                          {value}
                        </th>
                      ) : (
                        <td key={i}>{value}</td>
                      ),
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="chart-actions">
            <button type="button" className="small" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
              Previous users
            </button>
            <button
              type="button"
              className="small"
              disabled={!users.data.meta.has_more || !users.data.meta.next_cursor}
              onClick={() => setCursors([...cursors, users.data!.meta.next_cursor!])}
            >
              Next users
            </button>
            <button
              type="button"
              className="small"
              onClick={() =>
                downloadCsv(
                  `users_${range.start}_${range.end}_page-${page}.csv`,
                  toCsv(
                    USER_COLUMNS.map(([, label]) => label),
                    users.data!.data.map(cells),
                  ),
                )
              }
            >
              Download CSV<span className="visually-hidden"> (users, page {page})</span>
            </button>
          </div>
        </>
      )}
    </section>
  );
}
