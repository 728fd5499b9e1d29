import { Link } from 'react-router';
import { Page } from '../components/Page';

export default function NotForYourRole({ label }: { label: string }) {
  return (
    <Page title={`${label}: not for your role`}>
      <p>Your role does not give access to this page. An owner or manager of your organization can change your role.</p>
      <p>
        <Link to="/">Go to the overview</Link>
      </p>
    </Page>
  );
}
