import { describe, expect, it } from 'vitest';
import { TurnGathering } from '../../src/http/turn-gathering.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnGathering', () => {
  it('lets the first answer of a turn go at once and holds the later ones until the turn ends', async () => {
    const gathering = new TurnGathering();
    const order: string[] = [];
    expect(gathering.wait()).toBeNull();
    const second = gathering.wait();
    const third = gathering.wait();
    expect(second).not.toBeNull();
    expect(third).toBe(second);
    void second?.then(() => order.push('gathered'));
    await Promise.resolve();
    order.push('same turn');
    await nextTurn();
    await Promise.resolve();
    expect(order).toEqual(['same turn', 'gathered']);
  });

  it('starts afresh in the next turn: its first answer goes at once again', async () => {
    const gathering = new TurnGathering();
    expect(gathering.wait()).toBeNull();
    await gathering.wait();
    expect(gathering.wait()).toBeNull();
    expect(gathering.wait()).not.toBeNull();
  });
});
