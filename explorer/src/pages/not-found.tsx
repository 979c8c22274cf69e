import { PageHeading } from '../components/page-heading';

export function NotFoundPage({ path }: { path: string }) {
  return (
    <>
      <PageHeading title="Page not found" />
      <p>There is no page at <code>#/{path}</code>. Try the search box, or go to the <a href="#/">overview</a>.</p>
    </>
  );
}
