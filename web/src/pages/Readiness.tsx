import { useId } from 'react';
import { Link, useSearchParams } from 'react-router';
import type { Schemas } from '../api/client';
import { useMaturityLevel, useReadinessCriteria, useReadinessReport, useReadinessRepositories, useRepositoryLevels } from '../api/readiness';
import { useMe } from '../auth/auth';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { LevelTrend } from '../components/LevelTrend';
import { Page } from '../components/Page';
import { formatTime } from '../format';
import '../fleet.css';

type Repository = Schemas['ReadinessRepository'];
type Report = Schemas['ReadinessReport'];
type Catalogue = Schemas['ReadinessCriteria'];
type Evaluation = Schemas['CriterionEvaluation'];

const passes = (evaluation: Evaluation | undefined) => evaluation !== undefined && evaluation.numerator >= evaluation.denominator;

/** `{app_url}/readiness`: the organization's repositories and their level, one repository's trend, one report by pillar. */
export default function Readiness() {
  const [params, setParams] = useSearchParams();
  const repoId = params.get('repo');
  const catalogue = useReadinessCriteria();
  const organization = useMaturityLevel();
  const repositories = useReadinessRepositories();
  const levelName = (level: number) => catalogue.data?.levels.find((candidate) => candidate.level === level)?.name ?? '';
  const repository = repositories.data?.repositories.find((candidate) => candidate.repoId === repoId);

  return (
    <Page
      title="Readiness"
      intro={
        <p>
          How ready each repository is for agents: the evaluator checks {catalogue.data?.criteria.length ?? 29} criteria over{' '}
          {catalogue.data?.pillars.length ?? 9} pillars and gives a level from 1 to 5. A repository unlocks the next level when it passes{' '}
          {Math.round((catalogue.data?.unlockShare ?? 0.8) * 100)}% of its level’s criteria.
        </p>
      }
    >
      {organization.data && organization.data.level !== null ? (
        <p className="level-big">
          {organization.data.repositories === 1
            ? 'Its one repository puts the organization'
            : `Over ${organization.data.repositories} repositories, the organization is`}{' '}
          at level {organization.data.level} · {organization.data.levelName}
        </p>
      ) : null}
      <ErrorMessage error={organization.error} action="Reading the organization's level" />
      <ErrorMessage error={catalogue.error} action="Reading the criteria" />
      {repositories.isPending ? (
        <p className="loading">Loading repositories…</p>
      ) : !repositories.data ? (
        <ErrorMessage error={repositories.error} action="Listing the repositories" />
      ) : repositories.data.repositories.length === 0 ? (
        <EmptyState title="No readiness reports yet.">
          <p>Evaluate a repository and upload its report with the command below; it then shows here with its level.</p>
        </EmptyState>
      ) : (
        <RepositoryTable repositories={repositories.data.repositories} selected={repoId} levelName={levelName} />
      )}
      {repoId ? (
        repository ? (
          <RepositoryView
            key={repository.repoId}
            repository={repository}
            catalogue={catalogue.data}
            reportId={params.get('report')}
            onReport={(reportId) => setParams({ repo: repository.repoId, report: reportId })}
          />
        ) : repositories.data ? (
          <p className="alert alert-info">No report of this repository in your organization. Pick one of the list above.</p>
        ) : null
      ) : null}
      <EvaluateCommand />
    </Page>
  );
}

function RepositoryTable({ repositories, selected, levelName }: { repositories: Repository[]; selected: string | null; levelName: (level: number) => string }) {
  return (
    <table className="table repositories">
      <caption className="visually-hidden">Repositories and their latest level</caption>
      <thead>
        <tr>
          <th scope="col">Repository</th>
          <th scope="col">Level</th>
          <th scope="col">Reports</th>
          <th scope="col">Latest report</th>
        </tr>
      </thead>
      <tbody>
        {repositories.map((repository) => (
          <tr key={repository.repoId} aria-current={repository.repoId === selected ? 'true' : undefined}>
            <th scope="row" data-label="Repository">
              <Link to={`?repo=${encodeURIComponent(repository.repoId)}`} aria-current={repository.repoId === selected ? 'page' : undefined}>
                {repository.repoUrl}
              </Link>
            </th>
            <td data-label="Level">
              <strong>{repository.level}</strong> {levelName(repository.level)}
            </td>
            <td data-label="Reports">{repository.reports}</td>
            <td data-label="Latest report">{formatTime(repository.latestCreatedAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RepositoryView({
  repository,
  catalogue,
  reportId,
  onReport,
}: {
  repository: Repository;
  catalogue: Catalogue | undefined;
  reportId: string | null;
  onReport: (reportId: string) => void;
}) {
  const id = useId();
  const history = useRepositoryLevels(repository);
  const points = history.data?.levels ?? [];
  const index = reportId ? points.findIndex((point) => point.reportId === reportId) : points.length - 1;
  const chosen = index >= 0 ? points[index] : undefined;
  const report = useReadinessReport(repository.repoId, chosen?.reportId, points[index + 1]?.reportId);
  const levelNames = catalogue?.levels.map((level) => level.name) ?? [];
  return (
    <section aria-labelledby={`${id}-title`} className="repository-view">
      <h2 id={`${id}-title`}>{repository.repoUrl}</h2>
      <h3>Level over time</h3>
      {history.isPending ? <p className="loading">Loading its history…</p> : <ErrorMessage error={history.error} action="Reading its levels" />}
      <LevelTrend points={points} levelNames={levelNames} selected={chosen?.reportId} />
      {points.length > 0 ? (
        <div className="field report-choice">
          <label htmlFor={`${id}-report`}>Report</label>
          <select id={`${id}-report`} value={chosen?.reportId ?? ''} onChange={(event) => onReport(event.target.value)}>
            {[...points].reverse().map((point, i) => (
              <option key={point.reportId} value={point.reportId}>
                {formatTime(point.createdAt)} · level {point.level}
                {i === 0 ? ' (latest)' : ''}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      {reportId && index < 0 && history.data ? (
        <p className="alert alert-info">That report is not among this repository’s latest {points.length}; showing none.</p>
      ) : null}
      {report.isPending && chosen ? <p className="loading">Loading the report…</p> : null}
      <ErrorMessage error={report.error} action="Reading the report" />
      {report.data && chosen && report.data.reportId === chosen.reportId ? (
        <ReportView report={report.data} level={chosen.level} catalogue={catalogue} />
      ) : null}
    </section>
  );
}

function ReportView({ report, level, catalogue }: { report: Report; level: number; catalogue: Catalogue | undefined }) {
  const known = new Set(catalogue?.criteria.map((criterion) => criterion.id));
  const others = Object.keys(report.report).filter((criterionId) => !known.has(criterionId));
  const apps = Object.entries(report.apps);
  const counted = catalogue?.criteria ?? [];
  const passed = counted.filter((criterion) => passes(report.report[criterion.id])).length;
  return (
    <article className="report" aria-label={`Report of ${formatTime(report.createdAt)}`}>
      <h3>
        Report of {formatTime(report.createdAt)}: level {level}
        {catalogue ? ` · ${catalogue.levels[level - 1]?.name ?? ''}` : ''}
      </h3>
      <dl className="facts">
        <dt>Criteria passed</dt>
        <dd>
          {passed} of {counted.length}
        </dd>
        {report.branch || report.commitHash ? (
          <>
            <dt>Evaluated</dt>
            <dd>
              {report.branch ? (
                <>
                  branch <code>{report.branch}</code>{' '}
                </>
              ) : null}
              {report.commitHash ? (
                <>
                  at <code>{report.commitHash.slice(0, 12)}</code>
                </>
              ) : null}
              {report.hasLocalChanges ? ' with uncommitted changes' : ''}
              {report.hasNonRemoteCommits ? ' (with commits not pushed)' : ''}
            </dd>
          </>
        ) : null}
        <dt>Applications</dt>
        <dd>{apps.length === 0 ? 'None found' : apps.map(([path, app]) => `${path}${app.description ? ` (${app.description})` : ''}`).join(', ')}</dd>
        {report.agentVersion ? (
          <>
            <dt>Evaluator</dt>
            <dd>{report.agentVersion}</dd>
          </>
        ) : null}
      </dl>
      {catalogue
        ? catalogue.pillars.map((pillar) => {
            const criteria = catalogue.criteria.filter((criterion) => criterion.pillar === pillar.id);
            if (criteria.length === 0) return null;
            const pillarPassed = criteria.filter((criterion) => passes(report.report[criterion.id])).length;
            return (
              <section key={pillar.id} className="pillar" aria-label={pillar.name}>
                <h4 className="pillar-title">
                  {pillar.name}{' '}
                  <span className="hint">
                    {pillarPassed} of {criteria.length} pass
                  </span>
                </h4>
                <ul className="criteria">
                  {criteria.map((criterion) => {
                    const evaluation = report.report[criterion.id];
                    const ok = passes(evaluation);
                    return (
                      <li key={criterion.id} className={ok ? 'pass' : 'fail'} data-criterion={criterion.id}>
                        <div className="criterion-head">
                          <span>
                            {criterion.title} <span className="hint">(level {criterion.level})</span>
                          </span>
                          <span className={`status-pill status-${ok ? 'pass' : 'fail'}`}>
                            {ok ? 'Pass' : 'Fail'}
                            {evaluation && criterion.scope === 'application' ? ` · ${evaluation.numerator} of ${evaluation.denominator} apps` : ''}
                          </span>
                        </div>
                        <p className="rationale">{evaluation ? evaluation.rationale || 'No rationale given.' : 'Not in this report (counts as failed).'}</p>
                      </li>
                    );
                  })}
                </ul>
              </section>
            );
          })
        : null}
      {others.length > 0 ? (
        <section className="pillar" aria-label="Other criteria">
          <h4 className="pillar-title">
            Other criteria <span className="hint">kept as uploaded; they do not count towards the level</span>
          </h4>
          <ul className="criteria">
            {others.map((criterionId) => {
              const evaluation = report.report[criterionId];
              const ok = passes(evaluation);
              return (
                <li key={criterionId} className={ok ? 'pass' : 'fail'}>
                  <div className="criterion-head">
                    <code>{criterionId}</code>
                    <span className={`status-pill status-${ok ? 'pass' : 'fail'}`}>
                      {ok ? 'Pass' : 'Fail'} · {evaluation.numerator} of {evaluation.denominator}
                    </span>
                  </div>
                  <p className="rationale">{evaluation.rationale}</p>
                </li>
              );
            })}
          </ul>
        </section>
      ) : null}
    </article>
  );
}

function EvaluateCommand() {
  const me = useMe();
  const uploads = me.user.role !== 'guest';
  const appUrl = window.location.origin;
  return (
    <section aria-labelledby="evaluate-locally">
      <h2 id="evaluate-locally">Evaluate a repository locally</h2>
      <p>
        From a checkout of Agent Platform (<code>npm install</code> done). The evaluator reads the files git sees, with no network and no model, and prints the
        level and every criterion with its evidence:
      </p>
      <div className="command">
        <pre aria-label="Evaluate">
          <code>npm run cli -- readiness evaluate ../your-repo</code>
        </pre>
      </div>
      {uploads ? (
        <>
          <p>To upload the report, so that it shows here, with an API key of yours:</p>
          <div className="command">
            <pre aria-label="Evaluate and upload">
              <code>{`npm run cli -- readiness evaluate ../your-repo --upload \\\n  --url ${appUrl} --api-key "$AGENT_PLATFORM_API_KEY"`}</code>
            </pre>
          </div>
          <p className="hint">
            <code>--json</code> prints the report itself. <code>--url</code> and <code>--api-key</code> may also come from <code>AGENT_PLATFORM_URL</code> and{' '}
            <code>AGENT_PLATFORM_API_KEY</code>.
          </p>
        </>
      ) : (
        <p className="hint">Guests may read reports but not upload them: an owner, manager or member uploads.</p>
      )}
    </section>
  );
}
