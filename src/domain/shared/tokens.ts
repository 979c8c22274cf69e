/** The two tokens (native and USDG), their decimals and symbols as clients may write them, and USD values from a price. */
import { InvalidRequestError } from './errors.js';
import { rescaleUnits, formatUnits } from './amount.js';

export type TokenKind = 'native' | 'usdg';
export type Token = { kind: TokenKind; symbol: string; decimals: number };

export const USDG_SYMBOL = 'USDG';
export const NATIVE_DECIMALS = 8;
export const USDG_DECIMALS = 6;
/** USD prices are held as integers with this many decimals. */
export const PRICE_DECIMALS = 12;
const USD_DECIMALS = 6;

/** The two tokens of a ledger: the native token (configurable symbol) and USDG. */
export class TokenRegistry {
  readonly native: Token;
  readonly usdg: Token;
  private readonly by_upper_symbol: Map<string, Token>;

  constructor(native_symbol: string) {
    this.native = { kind: 'native', symbol: native_symbol, decimals: NATIVE_DECIMALS };
    this.usdg = { kind: 'usdg', symbol: USDG_SYMBOL, decimals: USDG_DECIMALS };
    this.by_upper_symbol = new Map([
      [native_symbol.toUpperCase(), this.native],
      [USDG_SYMBOL, this.usdg],
    ]);
  }

  /** Case-insensitive lookup; the canonical symbol is what gets stored and returned. */
  resolve(symbol: unknown): Token {
    const token = typeof symbol === 'string' ? this.by_upper_symbol.get(symbol.toUpperCase()) : undefined;
    if (token === undefined) {
      throw new InvalidRequestError(
        'unsupported_token',
        `token must be one of ${this.native.symbol}, ${this.usdg.symbol}`,
        'token',
      );
    }
    return token;
  }

  /** The token a swap of `token` pays out: the other one of the pair. */
  other(token: Token): Token {
    return token.kind === 'native' ? this.usdg : this.native;
  }

  bySymbol(symbol: string): Token {
    const token = this.by_upper_symbol.get(symbol.toUpperCase());
    if (token === undefined) throw new Error(`unknown stored token ${symbol}`);
    return token;
  }
}

/** USD value, in micro-dollars, of native units at a price with PRICE_DECIMALS, plus USDG units. */
export function usdMicros(native_units: bigint, usdg_units: bigint, native_price_units: bigint): bigint {
  const native_value = rescaleUnits(native_units * native_price_units, NATIVE_DECIMALS + PRICE_DECIMALS, USD_DECIMALS);
  return native_value + rescaleUnits(usdg_units, USDG_DECIMALS, USD_DECIMALS);
}

export function formatUsdMicros(micros: bigint): string {
  return formatUnits(micros, USD_DECIMALS);
}
