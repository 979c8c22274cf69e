/** Time as the service sees it; tests pass their own. */
export type Clock = { now_ms(): number };

export const systemClock: Clock = { now_ms: () => Date.now() };

export function unixSeconds(clock: Clock): number {
  return Math.floor(clock.now_ms() / 1000);
}
