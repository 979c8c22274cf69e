/**
 * The explorer's market arithmetic, without a browser: the minimum a swap accepts from a quote and a
 * slippage tolerance (exact, in base units of the token received), a swap's effective price, the
 * 24-hour change, and where the price chart puts each candle.
 */
import { describe, expect, it } from 'vitest';
import {
  chartGeometry, checkSwapAmount, compareDecimals, dayChange, effectivePrice, fromUnits, minReceive, parseSlippage, percentChange, swapSummary,
  toUnits, totalVolume, type Candle,
} from '../../explorer/src/market.js';

describe('exact amounts', () => {
  it('reads and writes decimal text as base units, without floats', () => {
    expect(toUnits('12.5', 8)).toBe(1_250_000_000n);
    expect(toUnits('0.000001', 6)).toBe(1n);
    expect(toUnits('92233720368.54775807', 8)).toBe(9_223_372_036_854_775_807n);
    expect(toUnits('7.', 6)).toBe(7_000_000n);
    expect(toUnits('1.50000000000', 2)).toBe(150n);
    expect(() => toUnits('1.123', 2)).toThrow(RangeError);
    expect(() => toUnits('-1', 8)).toThrow(RangeError);
    expect(() => toUnits('1e3', 8)).toThrow(RangeError);
    expect(() => toUnits('', 8)).toThrow(RangeError);
    expect(fromUnits(1_250_000_000n, 8)).toBe('12.5');
    expect(fromUnits(0n, 6)).toBe('0');
    expect(fromUnits(1n, 6)).toBe('0.000001');
    expect(fromUnits(-250n, 2)).toBe('-2.5');
    expect(fromUnits(9_223_372_036_854_775_807n, 8)).toBe('92233720368.54775807');
  });

  it('checks an amount to swap against the decimals of the token paid', () => {
    expect(checkSwapAmount('10', 'TAB')).toBeNull();
    expect(checkSwapAmount(' 0.00000001 ', 'TAB')).toBeNull();
    expect(checkSwapAmount('0.0000001', 'USDG')).toBe('USDG has at most 6 decimals.');
    expect(checkSwapAmount('0', 'TAB')).toBe('Enter an amount above zero.');
    expect(checkSwapAmount('', 'TAB')).toBe('Enter an amount.');
    expect(checkSwapAmount('1,5', 'TAB')).toBe('Enter a positive decimal number, like 12.5.');
    expect(checkSwapAmount('-3', 'TAB')).toBe('Enter a positive decimal number, like 12.5.');
  });
});

describe('the minimum a swap accepts', () => {
  it('reads the slippage tolerance in hundredths of a percent, refusing nonsense', () => {
    expect(parseSlippage('0.5')).toEqual({ hundredths: 50n });
    expect(parseSlippage('1')).toEqual({ hundredths: 100n });
    expect(parseSlippage('0')).toEqual({ hundredths: 0n });
    expect(parseSlippage(' .25 ')).toEqual({ hundredths: 25n });
    expect(parseSlippage('0.125')).toEqual({ problem: 'Use at most 2 decimals, like 0.25.' });
    expect(parseSlippage('50')).toEqual({ problem: 'Keep it below 50 %.' });
    expect(parseSlippage('')).toEqual({ problem: 'Enter a percentage, like 0.5.' });
    expect(parseSlippage('-1')).toEqual({ problem: 'Enter a percentage, like 0.5.' });
    expect(parseSlippage('abc')).toEqual({ problem: 'Enter a percentage, like 0.5.' });
  });

  it('is floor(amount_out × (1 − slippage)) in base units of the token received', () => {
    // The quote of docs/api.md: 10 TAB → 9.87158 USDG; 0.5 % less is 9.8222221 USDG, floored to 6 decimals.
    expect(minReceive('9.87158', 'USDG', 50n)).toEqual({ units: 9_822_222n, text: '9.822222' });
    expect(minReceive('1.23456789', 'TAB', 50n)).toEqual({ units: 122_839_505n, text: '1.22839505' });
    expect(minReceive('1.23456789', 'TAB', 0n)).toEqual({ units: 123_456_789n, text: '1.23456789' });
    expect(minReceive('0.000001', 'USDG', 1n)).toEqual({ units: 0n, text: '0' });
    // Beyond 2^53 base units: exact, where a double would round.
    expect(minReceive('92233720368.54775807', 'TAB', 50n)).toEqual({ units: 9_177_255_176_670_501_927n, text: '91772551766.70501927' });
    expect(() => minReceive('1', 'TAB', 10_000n)).toThrow(RangeError);
    expect(() => minReceive('1.0000001', 'USDG', 50n)).toThrow(RangeError);
  });
});

describe("a swap's price", () => {
  it('is USDG per native token, whichever way the swap went, to 12 decimals rounded down', () => {
    expect(effectivePrice({ amount_text: '10', token: 'TAB' }, { amount_text: '9.87158', token: 'USDG' })).toBe('0.987158');
    expect(effectivePrice({ amount_text: '100', token: 'USDG' }, { amount_text: '12.34567891', token: 'TAB' })).toBe('8.100000067149');
    expect(effectivePrice({ amount_text: '1', token: 'USDG' }, { amount_text: '3', token: 'TAB' })).toBe('0.333333333333');
    expect(effectivePrice({ amount_text: '0.00000001', token: 'TAB' }, { amount_text: '0.000001', token: 'USDG' })).toBe('100');
    // Any native symbol; a zero or same-token side has no price.
    expect(effectivePrice({ amount_text: '2', token: 'GOLD' }, { amount_text: '5', token: 'USDG' })).toBe('2.5');
    expect(effectivePrice({ amount_text: '5', token: 'USDG' }, { amount_text: '0', token: 'TAB' })).toBeNull();
    expect(effectivePrice({ amount_text: '5', token: 'USDG' }, { amount_text: '5', token: 'USDG' })).toBeNull();
  });

  it('sums up a swap record: paid, received (or pending, or failed), price and minimum, from the exact texts', () => {
    const base = { amount: 10, amount_text: '10', token: 'TAB', token_out: 'USDG', min_receive: 9.82, min_receive_text: '9.822222' };
    expect(swapSummary({ ...base, status: 'confirmed', amount_out: 9.87158, amount_out_text: '9.87158' })).toEqual({
      paid: { amount_text: '10', token: 'TAB' },
      outcome: 'received',
      received: { amount_text: '9.87158', token: 'USDG' },
      price: '0.987158',
      min_receive: { amount_text: '9.822222', token: 'USDG' },
      token_out: 'USDG',
    });
    expect(swapSummary({ ...base, status: 'pending', amount_out: null })).toMatchObject({ outcome: 'pending', received: null, price: null });
    expect(swapSummary({ ...base, status: 'failed', amount_out: null })).toMatchObject({ outcome: 'failed', received: null, price: null });
    expect(swapSummary({ amount_text: '1', token: 'USDG', status: 'confirmed', token_out: 'TAB', amount_out: 0.5, min_receive: null })).toMatchObject({
      received: { amount_text: '0.5', token: 'TAB' }, price: '2', min_receive: null,
    });
  });
});

const candle = (start: number, open: string, high: string, low: string, close: string, volume_usd = '0'): Candle => ({ start, open, high, low, close, volume_usd });

describe('the price summary', () => {
  it('gives the change in percent, two decimals rounded toward zero, signed', () => {
    expect(percentChange('1', '1.025')).toBe('+2.5');
    expect(percentChange('3', '2.99')).toBe('-0.33');
    expect(percentChange('1', '1')).toBe('0');
    expect(percentChange('0.000000000001', '0.000000000002')).toBe('+100');
    expect(percentChange('0', '1')).toBeNull();
    expect(compareDecimals('1.5', '1.50')).toBe(0);
    expect(compareDecimals('0.999999999999', '1')).toBe(-1);
  });

  it('compares the last close with the price 24 hours ago: the close of the last candle ended by then, else the first open', () => {
    const now = 200 * 3600 + 1800;
    const hourly = [
      candle(170 * 3600, '0.9', '1', '0.9', '1'),
      candle(175 * 3600, '1', '1.1', '1', '1.05'),
      candle(200 * 3600, '1.05', '1.3', '1.05', '1.26'),
    ];
    // The cutoff (176.5 h) falls after the candle of hour 175 ended: the price then was its close.
    expect(dayChange(hourly, '1h', now)).toEqual({ from: '1.05', to: '1.26', change_pct: '+20' });
    // All candles are newer than 24 h: the change is from the first open.
    expect(dayChange(hourly.slice(2), '1h', now)).toEqual({ from: '1.05', to: '1.26', change_pct: '+20' });
    expect(dayChange(hourly.slice(1), '1h', now)).toEqual({ from: '1.05', to: '1.26', change_pct: '+20' });
    expect(dayChange(hourly.slice(0, 1), '1h', 170 * 3600 + 10)).toEqual({ from: '0.9', to: '1', change_pct: '+11.11' });
    expect(dayChange([], '1h', now)).toBeNull();
    expect(totalVolume([candle(0, '1', '1', '1', '1', '12.5'), candle(60, '1', '1', '1', '1', '0.000001')])).toBe('12.500001');
  });
});

describe('the price chart', () => {
  const box = { width: 220, height: 120, left: 10, right: 10, top: 10, bottom: 10 };

  it('puts the candles left to right, one slot each, the highest high at the top and the lowest low at the bottom (5 % padding)', () => {
    const geometry = chartGeometry([candle(0, '1', '1.2', '0.9', '1.1'), candle(60, '1.1', '1.1', '0.8', '0.85')], box);
    expect(geometry.low).toBe('0.8');
    expect(geometry.high).toBe('1.2');
    // Plot 100 px high over 0.8 − 0.02 .. 1.2 + 0.02.
    expect(geometry.y('1.2')).toBeCloseTo(10 + (0.02 / 0.44) * 100, 1);
    expect(geometry.y('0.8')).toBeCloseTo(110 - (0.02 / 0.44) * 100, 1);
    const [first, second] = geometry.bars;
    expect(first).toMatchObject({ start: 0, x: 60, rising: true });
    expect(second).toMatchObject({ start: 60, x: 160, rising: false, width: 24 });
    expect(first!.body_top).toBe(geometry.y('1.1'));
    expect(first!.body_bottom).toBe(geometry.y('1'));
    expect(first!.high_y).toBeLessThan(first!.body_top);
    expect(second!.low_y).toBe(geometry.y('0.8'));
    expect(geometry.close_path).toBe(`M60 ${geometry.y('1.1')} L160 ${geometry.y('0.85')}`);
  });

  it('draws a flat price across the middle, and many candles as thin bars that fit', () => {
    const flat = chartGeometry([candle(0, '1', '1', '1', '1'), candle(60, '1', '1', '1', '1')], box);
    expect(flat.y('1')).toBe(60);
    expect(flat.bars.every((bar) => bar.body_bottom - bar.body_top === 0)).toBe(true);
    const many = chartGeometry(Array.from({ length: 400 }, (_, index) => candle(index * 60, '1', '2', '0.5', '1.5')), box);
    expect(many.bars).toHaveLength(400);
    expect(many.bars[0]!.width).toBe(1);
    expect(many.bars[399]!.x).toBeLessThan(box.width - box.right);
    expect(chartGeometry([], box).bars).toEqual([]);
  });
});
