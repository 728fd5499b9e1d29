import { Link } from 'react-router';
import { useMe } from '../auth/auth';
import { Page } from '../components/Page';
import { ROLE_LABELS } from '../format';
import { navigationFor } from '../routes';

export default function Overview() {
  const me = useMe();
  return (
    <Page title="Overview">
      <p>
        You are signed in to <strong>{me.organization.name}</strong> as {me.user.name} ({me.user.email}), with the role{' '}
        <strong>{ROLE_LABELS[me.user.role]}</strong>.
      </p>
      <ul className="cards">
        {navigationFor(me.user.role)
          .filter((page) => page.path !== '/')
          .map((page) => (
            <li key={page.path}>
              <Link to={page.path}>{page.label}</Link>
              {page.summary ? <p>{page.summary}</p> : null}
            </li>
          ))}
        <li>
          <a href="/docs">API documentation</a>
          <p>Every endpoint of the API, to try from the browser (Swagger UI).</p>
        </li>
      </ul>
    </Page>
  );
}
