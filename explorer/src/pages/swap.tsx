/**
 * A swap from the signed-in user (`from` and `to` are the token's `sub`) against the pool: pay an
 * amount of one token, receive the other. While the amount is typed, a quote (GET /api/price/quote,
 * debounced, and refreshed while the page is open) shows what it would receive now, the price before
 * and after, and the fee; the slippage tolerance turns the quote into the least the swap accepts,
 * floor(amount_out × (1 − slippage)) in base units of the token received, which is sent as
 * `min_receive`: if the price moves further before the block, the swap fails and moves nothing.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, randomKey } from '@tabula/client';
import { useApi } from '../api';
import { Fields, Notice } from '../components/bits';
import { PageHeading } from '../components/page-heading';
import { TradeTabs } from '../components/trade-tabs';
import { groupDigits } from '../format';
import { checkSwapAmount, decimalsOf, minReceive, parseSlippage, SLIPPAGE_DEFAULT_PCT, USDG_SYMBOL, type MinReceive } from '../market';
import { fetchQuote, type Quote } from '../market-api';
import { navigate } from '../router';

export const QUOTE_DEBOUNCE_MS = 300;
export const QUOTE_REFRESH_MS = 5000;

type FieldName = 'amount' | 'token' | 'slippage';

type QuoteState =
  | { kind: 'idle' }
  | { kind: 'loading'; key: string }
  | { kind: 'ready'; key: string; quote: Quote }
  | { kind: 'unavailable'; key: string; message: string }
  | { kind: 'error'; key: string; message: string };

export function SwapPage() {
  const api = useApi();
  const { session, config } = api;
  const native = config.native_symbol;
  const [amount, setAmount] = useState('');
  const [token, setToken] = useState(native);
  const [slippage, setSlippage] = useState(SLIPPAGE_DEFAULT_PCT);
  const [quote, setQuote] = useState<QuoteState>({ kind: 'idle' });
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [field_problems, setFieldProblems] = useState<Partial<Record<FieldName, string>>>({});
  // One key per filled-in form: pressing Swap twice (or a retry) cannot swap twice.
  const [idempotency_key, setIdempotencyKey] = useState(randomKey);

  const token_out = token === USDG_SYMBOL ? native : USDG_SYMBOL;
  const amount_problem = checkSwapAmount(amount, token);
  const quote_key = `${amount.trim()} ${token}`;

  // The quote for what is typed: after a pause in typing, then again every few seconds (the reserves move with each block).
  useEffect(() => {
    if (amount_problem !== null) {
      setQuote({ kind: 'idle' });
      return;
    }
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout>;
    const load = async () => {
      try {
        const answer = await fetchQuote(token, amount.trim(), session.token, controller.signal);
        setQuote({ kind: 'ready', key: quote_key, quote: answer });
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error instanceof ApiError && error.code === 'market_unavailable') {
          setQuote({ kind: 'unavailable', key: quote_key, message: error.problem.detail });
        } else {
          setQuote({ kind: 'error', key: quote_key, message: api.describe(error) });
        }
      }
      if (!controller.signal.aborted) timer = setTimeout(() => void load(), QUOTE_REFRESH_MS);
    };
    setQuote((previous) => (previous.kind !== 'idle' && previous.key === quote_key ? previous : { kind: 'loading', key: quote_key }));
    timer = setTimeout(() => void load(), QUOTE_DEBOUNCE_MS);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [quote_key, amount_problem]);

  const tolerance = parseSlippage(slippage);
  const current = quote.kind === 'ready' && quote.key === quote_key ? quote.quote : null;
  const minimum: MinReceive | null = current === null || 'problem' in tolerance ? null : minReceive(current.amount_out, current.token_out, tolerance.hundredths);

  const submit = async (event: Event) => {
    event.preventDefault();
    const local: Partial<Record<FieldName, string>> = {};
    if (amount_problem !== null) local.amount = amount_problem;
    if ('problem' in tolerance) local.slippage = tolerance.problem;
    setFieldProblems(local);
    if (Object.keys(local).length > 0) {
      setProblem('Please correct the fields marked below.');
      return;
    }
    if (minimum === null) {
      setProblem(quote.kind === 'unavailable' ? 'The market cannot take this swap now (see the quote).' : 'Wait for the quote: the minimum you accept is computed from it.');
      return;
    }
    setBusy(true);
    setProblem(null);
    try {
      const receipt = await api.client.submitTransaction(
        { from: session.sub, to: session.sub, amount: amount.trim(), token, type: 'swap', min_receive: minimum.text },
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

  const shownProblem = (name: FieldName) => field_problems[name] ?? (name === 'slippage' && 'problem' in tolerance ? tolerance.problem : undefined);
  const describedBy = (name: FieldName, help?: string) => [help, shownProblem(name) === undefined ? undefined : `${name}-problem`].filter(Boolean).join(' ') || undefined;
  const edit = (name: FieldName, setter: (value: string) => void) => (event: Event) => {
    setter((event.currentTarget as HTMLInputElement).value);
    setIdempotencyKey(randomKey());
    setProblem(null);
    setFieldProblems(({ [name]: _edited, ...rest }) => rest);
  };

  return (
    <>
      <PageHeading title="Swap" />
      <TradeTabs current="swap" />
      <p>
        Trade with the ledger's pool from your account <strong class="account-name">{session.sub}</strong>: pay {native} to
        receive USDG, or USDG to receive {native}. The swap is executed in the next block at the pool's price then, and fails,
        moving nothing, if that would give you less than the minimum below.
      </p>
      {problem === null ? null : <Notice kind="error" title="Not swapped">{problem}</Notice>}
      <form class="card form swap" onSubmit={(event) => void submit(event)} noValidate>
        <div class="row">
          <div class="grow">
            <label for="swap-amount">You pay</label>
            <input id="swap-amount" name="amount" value={amount} onInput={edit('amount', setAmount)} required inputMode="decimal" autoComplete="off"
              aria-invalid={field_problems.amount !== undefined} aria-describedby={describedBy('amount', 'swap-amount-help')} />
            <p id="swap-amount-help" class="help">Up to {decimalsOf(token)} decimals. Sent exactly as typed.</p>
            <FieldProblem name="amount" text={field_problems.amount} />
          </div>
          <div>
            <label for="swap-token">Token paid</label>
            <select id="swap-token" name="token" value={token} onChange={edit('token', setToken)} aria-describedby="swap-token-help">
              <option value={native}>{native}</option>
              <option value={USDG_SYMBOL}>{USDG_SYMBOL}</option>
            </select>
            <p id="swap-token-help" class="help">You receive {token_out}.</p>
            <FieldProblem name="token" text={field_problems.token} />
          </div>
        </div>

        <label for="swap-slippage">Slippage tolerance (%)</label>
        <input id="swap-slippage" name="slippage" value={slippage} onInput={edit('slippage', setSlippage)} inputMode="decimal" autoComplete="off"
          aria-invalid={shownProblem('slippage') !== undefined} aria-describedby={describedBy('slippage', 'slippage-help')} />
        <p id="slippage-help" class="help">How much less than the quote you still accept, if the price moves before the block. Default {SLIPPAGE_DEFAULT_PCT} %.</p>
        <FieldProblem name="slippage" text={shownProblem('slippage')} />

        <QuotePanel state={quote} quote_key={quote_key} current={current} minimum={minimum} token={token} token_out={token_out} native={native} />

        <button type="submit" class="primary" disabled={busy}>{busy ? 'Swapping…' : 'Swap'}</button>
      </form>
    </>
  );
}

function QuotePanel(props: { state: QuoteState; quote_key: string; current: Quote | null; minimum: MinReceive | null; token: string; token_out: string; native: string }) {
  const { state, current, minimum, token, token_out, native } = props;
  const fresh = state.kind !== 'idle' && state.key === props.quote_key;
  return (
    <section class="quote" aria-labelledby="quote-heading" aria-live="polite" data-quote={fresh ? state.kind : 'idle'}>
      <h2 id="quote-heading">Quote</h2>
      {!fresh ? <p class="muted">Enter an amount to see what you would receive.</p>
        : state.kind === 'loading' ? <p class="muted">Asking the pool…</p>
        : state.kind === 'unavailable' ? (
          <Notice kind="warning" title="The market is not available">
            <p>{state.message}</p>
            <p>A swap needs liquidity in both of the pool's reserves, and an amount large enough to receive at least one base unit.</p>
          </Notice>
        )
        : state.kind === 'error' ? <Notice kind="error" title="No quote">{state.message}</Notice>
        : current === null ? null : (
          <Fields rows={[
            ['You receive (now)', <span data-field="amount-out"><span class="amount">{groupDigits(current.amount_out)}</span> {current.token_out}</span>],
            [`Price (USDG per ${native})`, <span data-field="price">{groupDigits(current.price)}</span>],
            ['Price after this swap', <span data-field="price-after">{groupDigits(current.price_after)}</span>],
            ['Pool fee', <span data-field="fee"><span class="amount">{groupDigits(current.fee)}</span> {token}</span>],
            ['Minimum you accept', minimum === null ? <span class="muted">set a valid slippage tolerance</span> : (
              <span data-field="minimum" class="minimum"><span class="amount">{groupDigits(minimum.text)}</span> {token_out}</span>
            )],
          ]} />
        )}
      <p class="help">A quote is not binding: it is the pool as of the newest block. The minimum is sent with the swap as <code>min_receive</code>.</p>
    </section>
  );
}

function FieldProblem({ name, text }: { name: FieldName; text: string | undefined }) {
  return text === undefined ? null : <p id={`${name}-problem`} class="field-problem">{text}</p>;
}

/** The service's per-field reasons (`errors[].field`), else its code's field. */
function fieldProblemsOf(error: ApiError): Partial<Record<FieldName, string>> {
  const problems: Partial<Record<FieldName, string>> = {};
  for (const item of error.problem.errors ?? []) {
    const name = item.field === 'min_receive' ? 'slippage' : item.field;
    if (name === 'amount' || name === 'token' || name === 'slippage') problems[name] = item.field === 'min_receive' ? `The minimum: ${item.message}` : item.message;
  }
  if (Object.keys(problems).length === 0 && error.code.startsWith('amount_')) problems.amount = error.problem.detail;
  return problems;
}
