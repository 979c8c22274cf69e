/** One box for a transaction hash, a block number or a user id. */
import { useState } from 'preact/hooks';
import { navigate } from '../router';
import { searchTarget } from '../routes';

export function SearchBox() {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const target = searchTarget(text);
    if ('problem' in target) {
      setProblem(target.problem);
      return;
    }
    setProblem(null);
    setText('');
    navigate(target.route);
  };
  return (
    <form class="search" role="search" onSubmit={submit} noValidate>
      <label for="search-input" class="visually-hidden">Search by transaction hash, block number or user id</label>
      <input
        id="search-input"
        type="search"
        name="q"
        value={text}
        onInput={(event) => setText((event.currentTarget as HTMLInputElement).value)}
        placeholder="Tx hash, block number or user id"
        autoComplete="off"
        spellcheck={false}
        aria-invalid={problem !== null}
        aria-describedby={problem === null ? undefined : 'search-problem'}
      />
      <button type="submit">Search</button>
      {problem === null ? null : <p id="search-problem" class="search-problem" role="alert">{problem}</p>}
    </form>
  );
}
