/**
 * A transfer from the signed-in user (`from` is the token's `sub`). The amount is sent as the exact
 * decimal text typed; after the service accepts it (202), the page opens the transaction, which
 * follows it to its block.
 */
import { useState } from 'preact/hooks';
import { ApiError, randomKey } from '@tabula/client';
import { useApi } from '../api';
import { Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { TradeTabs } from '../components/trade-tabs';
import { navigate } from '../router';

const MEMO_LENGTH_MAX = 200;

type FieldName = 'to' | 'amount' | 'token' | 'memo';

export function TransferPage() {
  const api = useApi();
  const { session, config } = api;
  const [to, setTo] = useState('');
  const [amount, setAmount] = useState('');
  const [token, setToken] = useState(config.native_symbol);
  const [memo, setMemo] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [field_problems, setFieldProblems] = useState<Partial<Record<FieldName, string>>>({});
  // One key per filled-in form: pressing Send twice (or a retry) cannot send twice.
  const [idempotency_key, setIdempotencyKey] = useState(randomKey);

  const submit = async (event: Event) => {
    event.preventDefault();
    const local = checkFields(to, amount, session.sub);
    setFieldProblems(local);
    if (Object.keys(local).length > 0) {
      setProblem('Please correct the fields marked below.');
      return;
    }
    setBusy(true);
    setProblem(null);
    try {
      const receipt = await api.client.submitTransaction(
        { from: session.sub, to: to.trim(), amount: amount.trim(), token, type: 'transfer', ...(memo.trim() === '' ? {} : { metadata: { memo: memo.trim() } }) },
        { idempotencyKey: idempotency_key },
      );
      navigate({ name: 'transaction', hash: receipt.tx_hash });
    } catch (error) {
      setBusy(false);
      setProblem(api.describe(error));
      if (error instanceof ApiError) {
        setFieldProblems(fieldProblemsOf(error));
        // The service refused this request and stored nothing: a corrected form is a new request.
        if (error.status < 500 && error.status !== 429) setIdempotencyKey(randomKey());
      }
    }
  };

  const describedBy = (name: FieldName, help?: string) => [help, field_problems[name] === undefined ? undefined : `${name}-problem`].filter(Boolean).join(' ') || undefined;
  const edit = (name: FieldName, setter: (value: string) => void) => (event: Event) => {
    setter((event.currentTarget as HTMLInputElement).value);
    setIdempotencyKey(randomKey());
    setProblem(null);
    setFieldProblems(({ [name]: _edited, ...rest }) => rest);
  };

  return (
    <>
      <PageHeading title="Send a transfer" />
      <TradeTabs current="transfer" />
      <p>
        From your account <strong class="account-name">{session.sub}</strong> (the subject of your token). The ledger
        confirms it in the next block if your balance covers it, and fails it otherwise.
      </p>
      {problem === null ? null : <Notice kind="error" title="Not sent">{problem}</Notice>}
      <form class="card form transfer" onSubmit={(event) => void submit(event)} noValidate>
        <label for="transfer-from">From</label>
        <input id="transfer-from" name="from" value={session.sub} readOnly aria-describedby="from-help" />
        <p id="from-help" class="help">Only an admin may send from another account.</p>

        <label for="transfer-to">To (user id)</label>
        <input id="transfer-to" name="to" value={to} onInput={edit('to', setTo)} required autoComplete="off" spellcheck={false}
          aria-invalid={field_problems.to !== undefined} aria-describedby={describedBy('to')} />
        <FieldProblem name="to" text={field_problems.to} />

        <div class="row">
          <div class="grow">
            <label for="transfer-amount">Amount</label>
            <input id="transfer-amount" name="amount" value={amount} onInput={edit('amount', setAmount)} required inputMode="decimal" autoComplete="off"
              aria-invalid={field_problems.amount !== undefined} aria-describedby={describedBy('amount', 'amount-help')} />
            <p id="amount-help" class="help">Up to 8 decimals for {config.native_symbol}, 6 for USDG. Sent exactly as typed.</p>
            <FieldProblem name="amount" text={field_problems.amount} />
          </div>
          <div>
            <label for="transfer-token">Token</label>
            <select id="transfer-token" name="token" value={token} onChange={edit('token', setToken)}>
              <option value={config.native_symbol}>{config.native_symbol}</option>
              <option value="USDG">USDG</option>
            </select>
            <FieldProblem name="token" text={field_problems.token} />
          </div>
        </div>

        <label for="transfer-memo">Memo (optional)</label>
        <input id="transfer-memo" name="memo" value={memo} onInput={edit('memo', setMemo)} maxLength={MEMO_LENGTH_MAX} autoComplete="off"
          aria-describedby={describedBy('memo', 'memo-help')} />
        <p id="memo-help" class="help">Stored in the transaction's metadata as <code>{'{"memo": …}'}</code>; visible to everyone.</p>
        <FieldProblem name="memo" text={field_problems.memo} />

        <button type="submit" class="primary" disabled={busy}>{busy ? 'Sending…' : 'Send transfer'}</button>
      </form>
    </>
  );
}

function FieldProblem({ name, text }: { name: FieldName; text: string | undefined }) {
  return text === undefined ? null : <p id={`${name}-problem`} class="field-problem">{text}</p>;
}

function checkFields(to: string, amount: string, from: string): Partial<Record<FieldName, string>> {
  const problems: Partial<Record<FieldName, string>> = {};
  if (to.trim() === '') problems.to = 'Name the user to send to.';
  else if (to.trim() === from) problems.to = 'You cannot send to yourself.';
  if (amount.trim() === '') problems.amount = 'Enter an amount.';
  else if (!/^[0-9]*\.?[0-9]+$|^[0-9]+\.$/.test(amount.trim())) problems.amount = 'Enter a positive decimal number, like 12.5.';
  return problems;
}

/** The service's per-field reasons (`errors[].field`), else its code's field. */
function fieldProblemsOf(error: ApiError): Partial<Record<FieldName, string>> {
  const problems: Partial<Record<FieldName, string>> = {};
  for (const item of error.problem.errors ?? []) {
    const name = item.field === 'metadata' ? 'memo' : item.field;
    if (name === 'to' || name === 'amount' || name === 'token' || name === 'memo') problems[name] = item.message;
  }
  if (Object.keys(problems).length === 0 && error.code.startsWith('amount_')) problems.amount = error.problem.detail;
  return problems;
}
