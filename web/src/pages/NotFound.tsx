import { Link, useLocation } from 'react-router';
import { Page } from '../components/Page';

export default function NotFound() {
  const { pathname } = useLocation();
  return (
    <Page title="Page not found">
      <p>
        There is no page at <code>{pathname}</code> in the console.
      </p>
      <p>
        <Link to="/">Go to the overview</Link>, or use the navigation above. The API's own addresses are listed in the <a href="/docs">API documentation</a>.
      </p>
    </Page>
  );
}
