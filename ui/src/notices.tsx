/** The page's error line: announced to screen readers (`role="alert"`), nothing rendered while `error` is empty. */
export function ErrorNotice({ error }: { error: string }) {
  if (error === '') return null;
  return (
    <p role="alert" class="error">
      {error}
    </p>
  );
}
