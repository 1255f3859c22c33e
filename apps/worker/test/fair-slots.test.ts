import { describe, expect, it } from '@jest/globals';
import { FairSlots } from '../src/stamping/fair-slots.ts';

/** Work that ends when the test says so. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FairSlots', () => {
  it('never runs more than its capacity at once', async () => {
    const slots = new FairSlots(3);
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        slots.run(i % 2 ? 'a' : 'b', async () => {
          running++;
          most = Math.max(most, running);
          await tick();
          running--;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(slots.inFlight).toBe(0);
  });

  it('gives freed slots to each waiting key in turn: a late single row is not behind a whole group', async () => {
    const slots = new FairSlots(1);
    const first = gate();
    const order: string[] = [];
    const holding = slots.run('big', async () => {
      order.push('big-0');
      await first.opened;
    });
    // A group of five from one organization asks first, then one row of another.
    const group = Array.from({ length: 5 }, (_, i) =>
      slots.run('big', () => Promise.resolve(void order.push(`big-${i + 1}`))),
    );
    const single = slots.run('small', () => Promise.resolve(void order.push('small')));
    first.open();
    await Promise.all([holding, ...group, single]);
    expect(order).toEqual(['big-0', 'big-1', 'small', 'big-2', 'big-3', 'big-4', 'big-5']);
  });

  it('hands a freed slot to a waiter before a newcomer can take it', async () => {
    const slots = new FairSlots(1);
    const first = gate();
    const order: string[] = [];
    const holding = slots.run('a', () => first.opened);
    const waiter = slots.run('a', () => Promise.resolve(void order.push('waiter')));
    first.open();
    await holding;
    // Asks after the slot was freed and handed over: it waits its turn.
    const newcomer = slots.run('b', () => Promise.resolve(void order.push('newcomer')));
    await Promise.all([waiter, newcomer]);
    expect(order).toEqual(['waiter', 'newcomer']);
  });

  it('frees the slot of work that throws', async () => {
    const slots = new FairSlots(1);
    await expect(slots.run('a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.inFlight).toBe(0);
    await expect(slots.run('a', () => Promise.resolve(7))).resolves.toBe(7);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new FairSlots(0)).toThrow(RangeError);
    expect(() => new FairSlots(1.5)).toThrow(RangeError);
  });
});
